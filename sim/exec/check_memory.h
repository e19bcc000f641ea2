// The metadata check's pre-flight of host memory: what the check may hold at once at a
// run's largest sizes, against the machine's memory, so that sizes that cannot fit end in a clear
// error naming the option to change instead of a bad_alloc later.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "sim/exec/executor_registry.h"

namespace dspark::sim {

// [bytes] a bound of what the CPU check holds at the request's largest step: every
// implementation's buffers and the shared builders' (bt_out rows as steps need them,
// kernels/suite/bt_rows.h), the scratch a step touches, the step's arrays and the reference.
uint64_t CpuCheckBytes(const ExecutorRequest& request);
// OK when CpuCheckBytes(request) <= available_bytes; ResourceExhausted naming the sizes otherwise.
absl::Status CheckCpuCheckMemory(const ExecutorRequest& request, uint64_t available_bytes);
// [bytes] MemAvailable of /proc/meminfo (else the physical memory).
uint64_t AvailableHostMemory();

}  // namespace dspark::sim
