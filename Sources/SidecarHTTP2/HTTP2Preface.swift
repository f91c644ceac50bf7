/// The client connection preface of HTTP/2 with prior knowledge (RFC 9113 §3.4): how a plain
/// listener tells h2c from HTTP/1.1 on a connection's first bytes.
public enum HTTP2Preface {
    public enum Match: Equatable {
        /// The whole preface is there.
        case complete
        /// What arrived so far is the preface's beginning: wait for more.
        case partial
        /// Not HTTP/2.
        case no
    }

    public static let bytes: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    public static func match(_ prefix: UnsafeRawBufferPointer) -> Match {
        let count = min(prefix.count, bytes.count)
        for i in 0..<count where prefix[i] != bytes[i] { return .no }
        return count == bytes.count ? .complete : .partial
    }
}
