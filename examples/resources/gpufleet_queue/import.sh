# A ClusterQueue by its name (its LocalQueues are those of the same name in
# the namespaces its selector names).
terraform import gpufleet_queue.team_a team-a
