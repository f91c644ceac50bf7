import SidecarProxy
print("sidecar")
