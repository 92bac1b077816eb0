"""training/schedules/: how a workload's task blocks become one iteration, stage by stage."""
