# A label value holds at most 63 characters.
# expect: validate
# path: instance_families
# message: not a valid label value
resource "gpufleet_fleet" "this" {
  name              = "gpu"
  node_class        = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  instance_families = ["pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp"] # <- diagnostic
}
