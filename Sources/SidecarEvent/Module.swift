// SidecarEvent module — see README "Architecture".
