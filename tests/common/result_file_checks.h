// Checks that result files on disk are whole: the JSON parses, every CSV record has the
// header's number of fields and the file ends with its last record's newline, every JSONL line
// parses. Used by the tests that kill writers at random moments.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/common/temp_folders.h"

namespace dspark::testing_util {

// RFC 4180 records (fields may be quoted, with "" for a quote and newlines inside quotes).
// A file must end with a newline outside quotes: anything after the last one is a cut record.
inline absl::StatusOr<std::vector<std::vector<std::string>>> ParseCsvRecords(const std::string& text) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string field;
  bool quoted = false, field_started = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c != '"') {
        field += c;
      } else if (i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else {
        quoted = false;
      }
      continue;
    }
    if (c == '"' && !field_started) {
      quoted = true;
      field_started = true;
    } else if (c == ',') {
      record.push_back(std::move(field));
      field.clear();
      field_started = false;
    } else if (c == '\n') {
      record.push_back(std::move(field));
      field.clear();
      field_started = false;
      records.push_back(std::move(record));
      record.clear();
    } else if (c == '"') {
      return absl::DataLossError(absl::StrCat("a quote inside an unquoted field at byte ", i));
    } else {
      field += c;
      field_started = true;
    }
  }
  if (quoted) return absl::DataLossError("the file ends inside a quoted field");
  if (field_started || !record.empty())
    return absl::DataLossError(absl::StrCat("the last record (", records.size() + 1, ") has no newline: cut short"));
  return records;
}

// Header plus records, each with the header's field count; `#` lines before the header (meta
// lines) are skipped.
inline absl::StatusOr<std::vector<std::vector<std::string>>> ParseCsvTable(std::string text) {
  while (!text.empty() && text[0] == '#') {
    const size_t nl = text.find('\n');
    if (nl == std::string::npos) return absl::DataLossError("a meta line without its newline");
    text.erase(0, nl + 1);
  }
  absl::StatusOr<std::vector<std::vector<std::string>>> records = ParseCsvRecords(text);
  if (!records.ok()) return records.status();
  if (records->empty()) return absl::DataLossError("no header");
  for (size_t r = 1; r < records->size(); ++r)
    if ((*records)[r].size() != (*records)[0].size())
      return absl::DataLossError(absl::StrCat("record ", r, " has ", (*records)[r].size(), " fields, the header ",
                                              (*records)[0].size()));
  return records;
}

// OK when `path` parses completely as what its extension says (.json, .jsonl, .csv); other
// files only have to exist.
inline absl::Status CheckResultFile(const std::filesystem::path& path) {
  const std::string text = SlurpFile(path);
  const std::string ext = path.extension().string();
  const std::string where = path.string();
  if (ext == ".json") {
    if (!nlohmann::json::accept(text)) return absl::DataLossError(absl::StrCat(where, ": not whole JSON"));
  } else if (ext == ".jsonl") {
    if (!text.empty() && text.back() != '\n') return absl::DataLossError(absl::StrCat(where, ": last line cut short"));
    int line_no = 0;
    for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
      ++line_no;
      if (!nlohmann::json::accept(line))
        return absl::DataLossError(absl::StrCat(where, ":", line_no, ": not whole JSON"));
    }
  } else if (ext == ".csv") {
    absl::StatusOr<std::vector<std::vector<std::string>>> table = ParseCsvTable(text);
    if (!table.ok()) return absl::DataLossError(absl::StrCat(where, ": ", table.status().message()));
  } else if (!std::filesystem::exists(path)) {
    return absl::NotFoundError(absl::StrCat(where, ": absent"));
  }
  return absl::OkStatus();
}

// Every regular file under `dir` (recursive) whose name holds ".tmp." (WriteFileAtomically's
// temporaries), and every folder so named.
inline std::vector<std::filesystem::path> TemporariesUnder(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> found;
  std::error_code ec;
  for (std::filesystem::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename().string().find(".tmp.") != std::string::npos) found.push_back(it->path());
  return found;
}

}  // namespace dspark::testing_util
