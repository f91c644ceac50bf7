/// The one upgrade a proxy in front of an application passes on. An upgrade to
/// anything else — `h2c` above all — would hand the client a connection the proxy no longer
/// reads, so every later request on it would bypass the access decision (h2c smuggling).
extension HTTPHead {
    /// A validated upgrade (`Connection: upgrade` with `Upgrade`) whose `Upgrade` fields
    /// together name exactly one protocol, `websocket` (any case); `h2c`, `TLS/1.2` and lists
    /// such as `websocket, h2c` are not.
    public var upgradesToWebSocket: Bool {
        storage.withUnsafeBytes { buf in
            var tokens = 0
            var webSocket = false
            for field in fields where ByteCompare.equalsLowercased(buf, field.name, "upgrade") {
                Tokens.forEach(in: buf, Int(field.value.start), Int(field.value.end)) { s, e in
                    tokens += 1
                    webSocket = ByteCompare.equalsLowercased(buf, s, e, "websocket")
                }
            }
            return tokens == 1 && webSocket
        }
    }
}
