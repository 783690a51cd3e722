import {
  to = gpufleet_queue.team_a
  id = "team-a"
}
