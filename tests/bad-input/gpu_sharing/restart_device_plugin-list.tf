# A list where a bool belongs.
# expect: validate
# path: restart_device_plugin
# message: bool required
resource "gpufleet_gpu_sharing" "this" {
  strategy              = "none"
  restart_device_plugin = [true] # <- diagnostic
}
