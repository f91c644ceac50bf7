// SidecarHTTP module — see README "Architecture".
