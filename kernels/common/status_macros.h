// Abseil 20220623 ships no RETURN_IF_ERROR / ASSIGN_OR_RETURN; these are the small versions.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define DS_RETURN_IF_ERROR(expr)                   \
  do {                                             \
    const ::absl::Status ds_status_ = (expr);      \
    if (!ds_status_.ok()) return ds_status_;       \
  } while (0)

#define DS_CONCAT_INNER_(a, b) a##b
#define DS_CONCAT_(a, b) DS_CONCAT_INNER_(a, b)
#define DS_ASSIGN_OR_RETURN(lhs, expr) \
  DS_ASSIGN_OR_RETURN_IMPL_(DS_CONCAT_(ds_statusor_, __LINE__), lhs, expr)
#define DS_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()
