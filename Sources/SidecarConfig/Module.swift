// SidecarConfig module — see README "Architecture".
