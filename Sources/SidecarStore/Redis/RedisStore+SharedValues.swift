import SidecarRESP

/// Values replicas share beside the revocations (the ACME account key, certificate and
/// ordering lock), under the store's key prefix, over the calling thread's own connection
/// (`attach(to:)` first, on that thread).
extension RedisStore {
    /// `key` under the store's prefix, e.g. `sidecar:acme:cert:app.example.com`.
    public func sharedKey(_ key: String) -> String { endpoint.keyPrefix + key }

    /// Sends one command; `reply` gets nil when the connection is not ready or failed.
    public func sharedCommand(_ arguments: [[UInt8]], reply: @escaping (RESPValue?) -> Void) {
        sendBytes(arguments, reply: reply)
    }

    public var sharedLocation: String { endpoint.description }
}
