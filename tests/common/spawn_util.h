// Runs the real `dspark-sim` binary (built beside dspark_tests) as a child process with a
// changed environment, and collects its exit status, stdout and stderr. A child is needed where
// the environment must differ before the CUDA runtime starts (CUDA_VISIBLE_DEVICES="" hides every
// device only from a process that has not initialized CUDA yet).
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "tests/common/temp_folders.h"

extern char** environ;

namespace dspark::testing_util {

struct SpawnResult {
  bool started = false;    // posix_spawn succeeded
  bool exited = false;     // ended by exit(), not by a signal (a crash)
  int exit_code = -1;      // when exited
  int signal = 0;          // when killed by a signal
  std::string out, err;    // everything it wrote
};

// `dspark-sim` beside this test binary (both sit in the build folder, which may have moved, as it
// does when carried to the GPU machine); "" when it is not there.
inline std::string SimBinary() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const std::filesystem::path beside = self.parent_path() / "dspark-sim";
  return std::filesystem::exists(beside, ec) ? beside.string() : "";
}

// Starts the program argv_s[0] with argv_s and returns its pid, or -1 when it cannot start.
// `env` entries replace (or add) variables of this process's environment. Its stdout goes to
// `out_path`; its stderr to `err_path`, or to the same file when that is empty.
inline pid_t StartProgram(std::vector<std::string> argv_s, const std::map<std::string, std::string>& env,
                          const std::string& out_path, const std::string& err_path = "") {
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  std::vector<std::string> env_s;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string name = entry.substr(0, entry.find('='));
    if (env.count(name) == 0) env_s.push_back(entry);
  }
  for (const auto& [name, value] : env) env_s.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (std::string& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (err_path.empty())
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  else
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

// StartProgram of SimBinary() with `args` (argv[1..]).
inline pid_t StartSim(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                      const std::string& out_path, const std::string& err_path = "") {
  std::vector<std::string> argv_s = {SimBinary()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  return StartProgram(std::move(argv_s), env, out_path, err_path);
}

// Runs the program argv_s[0] to the end (see StartProgram). `scratch` is a folder for the
// captured output.
inline SpawnResult SpawnProgram(std::vector<std::string> argv_s, const std::map<std::string, std::string>& env,
                                const std::string& scratch) {
  SpawnResult r;
  const std::string out_path = scratch + "/child.stdout", err_path = scratch + "/child.stderr";
  const pid_t pid = StartProgram(std::move(argv_s), env, out_path, err_path);
  if (pid < 0) return r;
  r.started = true;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return r;
  r.exited = WIFEXITED(status);
  if (r.exited) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.out = SlurpFile(out_path);
  r.err = SlurpFile(err_path);
  return r;
}

// Runs SimBinary() with `args` (argv[1..]) to the end (see SpawnProgram).
inline SpawnResult SpawnSim(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                            const std::string& scratch) {
  std::vector<std::string> argv_s = {SimBinary()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  return SpawnProgram(std::move(argv_s), env, scratch);
}

}  // namespace dspark::testing_util
