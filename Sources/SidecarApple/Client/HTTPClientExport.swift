// The HTTPS client lives in SidecarHTTPClient (ACME uses it too); every user of the Apple
// client sees it through this module as before.
@_exported import SidecarHTTPClient
