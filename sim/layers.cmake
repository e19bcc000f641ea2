# The stages of sim/, lowest first, and the stages each one builds on directly (kernels/ is below
# them all). Read by CMakeLists.txt (one library per stage, linking these) and by
# scripts/check_layers.cmake (every #include "sim/<stage>/..." must name the file's own stage or
# one below it, directly or through another).
set(DSPARK_SIM_STAGES workload model engine options results exec observe studies cli)
set(DSPARK_SIM_STAGE_DEPS_workload "")                  # traces, generators, rng, utf8
set(DSPARK_SIM_STAGE_DEPS_model workload)               # scheduler, KV, acceptance, time model, step plan
set(DSPARK_SIM_STAGE_DEPS_engine model)                 # the clock and client; executor/observer interfaces
set(DSPARK_SIM_STAGE_DEPS_options workload)             # option-parsing helpers
set(DSPARK_SIM_STAGE_DEPS_results "")                   # result files, git info
set(DSPARK_SIM_STAGE_DEPS_exec engine results)          # the CPU and GPU executors
set(DSPARK_SIM_STAGE_DEPS_observe engine)               # metrics, step log, invariants
set(DSPARK_SIM_STAGE_DEPS_studies exec observe options) # run, sweep, soak, bench and TPOT loop
set(DSPARK_SIM_STAGE_DEPS_cli studies)                  # main and one file per subcommand

# out_var: `stage` and every stage below it.
function(dspark_sim_stage_closure stage out_var)
  set(seen ${stage})
  set(todo ${DSPARK_SIM_STAGE_DEPS_${stage}})
  while(todo)
    list(POP_FRONT todo s)
    if(NOT s IN_LIST seen)
      list(APPEND seen ${s})
      list(APPEND todo ${DSPARK_SIM_STAGE_DEPS_${s}})
    endif()
  endwhile()
  set(${out_var} ${seen} PARENT_SCOPE)
endfunction()
