// SidecarCrypto module — see README "Architecture".
