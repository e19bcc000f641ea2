// A request to stop a long command cleanly (SIGINT, SIGTERM): the engine finishes the step it is
// in and stops (Engine::Run returns Cancelled), so the command can write what it has.
#pragma once

#include <atomic>

namespace dspark::sim {

// The signal number that asked this process to stop, 0 while none did.
std::atomic<int>& StopSignal();

// Installs handlers for SIGINT and SIGTERM that set StopSignal(). Each handler is reset by its
// first delivery (SA_RESETHAND), so a second Ctrl-C ends the process at once, as usual.
void InstallStopHandlers();

// "SIGINT", "SIGTERM", or "signal N".
const char* StopSignalName(int signal);

}  // namespace dspark::sim
