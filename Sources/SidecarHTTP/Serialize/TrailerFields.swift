/// The trailer fields a proxy passes on, read from a trailer section `ChunkedDecoder` validated
/// (`.trailer` ranges: `name: value` CRLF lines) or a codec's own trailer fields.
///
/// A trailer arrives after the sidecar decided on the request and wrote the forwarded head,
/// and some servers fold trailers into the header fields their application reads (Tomcat's
/// `allowedTrailerHeaders`, CGI-style gateways): so a trailer may carry nothing a head field
/// would have been stripped of or that is decided from the head. Dropped are the names the
/// head's forwarding drops (hop-by-hop, the identity fields, the credentials the sidecar
/// strips) and the names RFC 9110 §6.5.1 says a trailer must not carry — framing, routing,
/// authentication, cookies, content metadata and response control. Everything else passes.
public enum TrailerFields {
    static let neverInTrailers = HeaderNameSet([
        "content-length", "content-type", "content-encoding", "content-range", "content-location",
        "host", "authorization", "proxy-authorization", "www-authenticate", "cookie", "set-cookie",
        "expect", "max-forwards", "range", "if-*", "cache-control", "age", "expires", "date", "vary",
        "location", "retry-after", "pragma", "forwarded", "x-forwarded-*", "x-real-ip", "via",
        "x-http-method-override", "x-http-method", "x-method-override", "x-original-*", "x-rewrite-url",
    ])

    /// Calls `emit` with each field of `section` that may be passed on under `forwarding`.
    public static func forEach(
        _ section: UnsafeRawBufferPointer, forwarding: FieldForwarding,
        _ emit: (_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) -> Void
    ) {
        RenderedFields.forEach(section) { name, value in
            if passes(name, forwarding: forwarding) { emit(name, value) }
        }
    }

    /// Whether a trailer field named `name` may be passed on under `forwarding`.
    public static func passes(_ name: UnsafeRawBufferPointer, forwarding: FieldForwarding) -> Bool {
        !name.isEmpty && forwarding.names.tag(of: name) == 0 && !neverInTrailers.contains(name)
    }
}
