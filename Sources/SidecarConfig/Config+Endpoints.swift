import SidecarHTTP

extension Config {
    /// `public_url` and `upstream`, the top-level keys without a default: where browsers reach
    /// the sidecar, and where it forwards. The schema copies them into `Config.publicURL`,
    /// `upstream` (the first server) and `upstreamServers`.
    struct Endpoints: Sendable, ConfigSection {
        var publicURL: HTTPURL?
        var upstreamServers: [UpstreamServer] = []

        init() {}

        static let path = ""
        static let keys: [ConfigKey<Self>] = [
            .required(\.publicURL, "public_url",
                      "the scheme and host the browser sees; https, except on loopback hosts (localhost, "
                          + "127.0.0.0/8, [::1])") { text, _ in publicURL(text) },
            .servers(\.upstreamServers, "upstream",
                     "http://host:port[/base], https://host:port[/base] or unix:/run/app.sock; several servers: a "
                         + "list, e.g. [http://10.0.0.1:3000, \"http://10.0.0.2:3000 weight=2\"]"),
        ]

        /// An origin Apple's sign-in can come back to: https, or plain http on a loopback host.
        static func publicURL(_ text: String) -> Result<HTTPURL, ValueError> {
            HTTPURL.parse(text, allowPath: false, allowQuery: false).flatMap { url in
                url.isHTTPS || url.isLoopback ? .success(url)
                    : .failure(ValueError("plain http is only allowed on loopback hosts (localhost, 127.0.0.0/8, "
                        + "[::1]): Apple's cross-site form_post could never carry the state cookie back (use https)"))
            }
        }
    }
}
