// Sets an environment variable for one scope and restores what it was (unset, or its old
// value): for the variables a factory reads when a run starts (the GPU executor's measuring aids
// and testing aids). Not thread-safe, as setenv is not.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace dspark::testing_util {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace dspark::testing_util
