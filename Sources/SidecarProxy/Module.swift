// SidecarProxy module — see README "Architecture".
