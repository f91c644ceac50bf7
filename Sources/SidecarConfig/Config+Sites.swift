/// `sites`: several public hosts on one sidecar, each with its own upstream.
extension Config {
    /// One entry of `sites`: the hosts it answers and where their requests go.
    public struct Site: Sendable, Equatable {
        /// The name logs use, and the name of its upstream among `upstreams`.
        public var name: String
        /// Lower case, without port or trailing dot.
        public var hosts: [String]

        public init(name: String, hosts: [String]) {
            self.name = name
            self.hosts = hosts
        }
    }
}
