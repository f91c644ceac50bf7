// SidecarApple module — see README "Architecture".
