// sim/workload/input_file.h: every input read is bounded. Regular files, FIFOs with a writer, pipes
// (process substitution's /dev/fd/N, /dev/stdin) are read whole; a FIFO with no writer, /dev/zero
// and /dev/urandom end in an error within a few seconds and the stream limit.
#include "sim/workload/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "tests/common/temp_folders.h"

namespace dspark::sim {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

ReadLimits Small() {
  ReadLimits l = TraceReadLimits();
  l.idle_timeout_ms = 300;
  return l;
}

TEST(ReadInputFile, ReadsARegularFileWhole) {
  const std::string path = testing_util::ProcessTempDir("input", "regular", true) + "/f";
  std::ofstream(path, std::ios::binary) << "a,b\n1,2";
  const absl::StatusOr<std::string> text = ReadInputFile(path, "--trace", Small());
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "a,b\n1,2");
}

TEST(ReadInputFile, ADirectoryIsAnErrorNotAnEmptyFile) {
  const std::string dir = testing_util::ProcessTempDir("input", "dir", true);
  const absl::StatusOr<std::string> text = ReadInputFile(dir, "--config", ConfigReadLimits());
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().message(), absl::StrCat("--config: '", dir, "' is a directory; expected a file"));
}

TEST(ReadInputFile, AFifoWithALateWriterIsReadWhole) {
  const std::string path = testing_util::ProcessTempDir("input", "fifo_writer", true) + "/fifo";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // after the reader opened it
    std::ofstream(path, std::ios::binary) << "x\ny\n";
  });
  ReadLimits l = Small();
  l.idle_timeout_ms = 5000;
  const absl::StatusOr<std::string> text = ReadInputFile(path, "--trace", l);
  writer.join();
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "x\ny\n");
}

TEST(ReadInputFile, AFifoWithoutAWriterTimesOutInsteadOfBlocking) {
  const std::string path = testing_util::ProcessTempDir("input", "fifo_alone", true) + "/fifo";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  const auto t0 = Clock::now();
  const absl::StatusOr<std::string> text = ReadInputFile(path, "--trace", Small());
  EXPECT_LT(SecondsSince(t0), 3.0);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().message(),
            absl::StrCat("--trace: '", path, "' (a FIFO or pipe) gave no data for 0.3 s; expected "
                         "a file, or a writer on the other end"));
}

// Process substitution (<(cmd)) hands the tool /dev/fd/N, the read end of a pipe.
TEST(ReadInputFile, APipeAsDevFdIsReadWhole) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::thread writer([&] {
    const std::string data = "{\"prompt_len\": 3, \"output_len\": 4}\n";
    EXPECT_EQ(::write(fds[1], data.data(), data.size()), static_cast<ssize_t>(data.size()));
    ::close(fds[1]);
  });
  const absl::StatusOr<std::string> text =
      ReadInputFile(absl::StrCat("/dev/fd/", fds[0]), "--trace", Small());
  writer.join();
  ::close(fds[0]);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "{\"prompt_len\": 3, \"output_len\": 4}\n");
}

TEST(ReadInputFile, DevStdinFromAPipeIsReadWhole) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const int saved = ::dup(0);
  ASSERT_GE(saved, 0);
  ASSERT_EQ(::dup2(fds[0], 0), 0);
  ::close(fds[0]);
  ASSERT_EQ(::write(fds[1], "k = v\n", 6), 6);
  ::close(fds[1]);
  const absl::StatusOr<std::string> text = ReadInputFile("/dev/stdin", "--config", ConfigReadLimits());
  ::dup2(saved, 0);
  ::close(saved);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "k = v\n");
}

TEST(ReadInputFile, DevZeroStopsAtTheLineLimitAtOnce) {
  const auto t0 = Clock::now();
  const absl::StatusOr<std::string> text = ReadInputFile("/dev/zero", "--trace", Small());
  EXPECT_LT(SecondsSince(t0), 3.0);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().message(),
            "--trace: '/dev/zero' line 1 is longer than 1 MiB; expected a text file of shorter lines");
}

TEST(ReadInputFile, DevUrandomStopsAtTheStreamLimit) {
  ReadLimits l = Small();
  l.max_stream_bytes = 4 << 20;
  const auto t0 = Clock::now();
  const absl::StatusOr<std::string> text = ReadInputFile("/dev/urandom", "--trace", l);
  EXPECT_LT(SecondsSince(t0), 3.0);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().message(),
            "--trace: '/dev/urandom' (a character device) gave more than 4 MiB; write it to a "
            "regular file, which may hold up to 2 GiB");
}

TEST(ReadInputFile, AFileThatIsTooLargeIsRefusedBeforeReading) {
  const std::string path = testing_util::ProcessTempDir("input", "large", true) + "/f";
  std::ofstream(path, std::ios::binary) << "x";
  std::filesystem::resize_file(path, 5000);  // sparse
  ReadLimits l = Small();
  l.max_file_bytes = 4096;
  const absl::StatusOr<std::string> text = ReadInputFile(path, "--calibration", l);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().message(),
            absl::StrCat("--calibration: '", path, "' is 5000 bytes, more than the 4 KiB an input "
                         "of this kind may have"));
}

TEST(Abbreviate, KeepsShortValuesAndCutsLongOnes) {
  EXPECT_EQ(Abbreviate("12345"), "12345");
  EXPECT_EQ(Abbreviate(std::string(40, '7')), std::string(40, '7'));
  EXPECT_EQ(Abbreviate(std::string(41, '7')), std::string(40, '7') + "... (41 bytes)");
  EXPECT_EQ(Abbreviate(std::string(50000000, '1'), 8), "11111111... (50000000 bytes)");
}

}  // namespace
}  // namespace dspark::sim
