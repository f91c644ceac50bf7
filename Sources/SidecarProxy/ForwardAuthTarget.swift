import SidecarConfig
import SidecarHTTP

/// `{prefix}/check/<original path>`: the form Envoy's ext_authz HTTP service asks in — the
/// original method, the original path appended to a path prefix, the original headers (those
/// its `allowed_headers` lets through). The answer is the decision on the original request
/// as if it had come to the sidecar, and on success what Envoy must take off the request it
/// forwards: Envoy adds the identity headers of the answer (`allowed_upstream_headers`) but
/// leaves the client's own copies of those the answer does not carry, so the answer names
/// them in `x-envoy-auth-headers-to-remove`.
struct ForwardAuthTarget {
    /// `{prefix}/check`, as sent: the form is recognized on the raw path only, so no spelling
    /// of another path normalizes into it and no dot segment of the original leaves it.
    private let checkPath: [UInt8]
    /// The identity header names in lower case, in `headers.*` order.
    private let identityNames: [[UInt8]]
    /// Always removed: `headers.strip` and the forwarding fields only a trusted proxy may set
    /// (`RequestRewriter.forwardingFields`), which the sidecar strips from what it forwards
    /// itself — Envoy passes the client's copies on.
    private let alwaysRemoved: [UInt8]

    init(prefix: [UInt8], headers: Config.Headers) {
        checkPath = prefix.isEmpty ? [] : prefix + Array("/check".utf8)  // no prefix: no endpoints
        identityNames = headers.identityHeaders.map { Array($0.lowercased().utf8) }
        alwaysRemoved = Array((headers.strip.map { $0.lowercased() } + RequestRewriter.forwardingFields)
            .joined(separator: ", ").utf8)
    }

    /// The original path (from its leading `/`) when `rawPath` is `{prefix}/check/…`.
    func original(of rawPath: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard !checkPath.isEmpty, rawPath.count > checkPath.count, rawPath[checkPath.count] == UInt8(ascii: "/"),
              rawPath.starts(with: checkPath)
        else { return nil }
        return UnsafeRawBufferPointer(rebasing: rawPath[checkPath.count...])
    }

    /// The value of `x-envoy-auth-headers-to-remove` for an answer carrying `identity` and
    /// the fields of `setting` (`rules[].set_headers`): every identity header and every name
    /// some rule sets that the answer does not set (Envoy sets those it does, replacing the
    /// client's), the ones removed always, `authorization` when it carried this sidecar's
    /// session token, and the client's own fields that are one of those names spelt otherwise
    /// (`X_Tenant` for `X-Tenant`: Envoy replaces and removes a name only as spelt, and a WSGI
    /// upstream reads both as one).
    func removals(
        for identity: RequestIdentity, view: HeadView, ruleHeaders: RuleHeaders, setting: RuleHeaders.Group
    ) -> [UInt8] {
        var value = removals(for: identity)
        func add(_ name: [UInt8]) {
            if !value.isEmpty { value += Array(", ".utf8) }
            value += name
        }
        for name in ruleHeaders.names where !ruleHeaders.sets(setting, foldedName: name) { add(Array(name.utf8)) }
        // Only a name with `_` can be one of them spelt otherwise: most checks carry none.
        var guarded: [String]?
        for field in view.fields where view[field.name].contains(UInt8(ascii: "_")) {
            let sent = String(decoding: view[field.name], as: UTF8.self)
            if guarded == nil {
                guarded = identityNames.map { Config.StaticHeader.fold(String(decoding: $0, as: UTF8.self)) } + ruleHeaders.names
            }
            if guarded?.contains(Config.StaticHeader.fold(sent)) == true { add(Array(sent.lowercased().utf8)) }
        }
        return value
    }

    func removals(for identity: RequestIdentity) -> [UInt8] {
        var present = [Bool](repeating: false, count: identityNames.count)
        if let opened = identity.opened {
            let mark = { (name: UnsafeRawBufferPointer, _: UnsafeRawBufferPointer) in
                for (k, known) in identityNames.enumerated() where !present[k] {
                    if known.count == name.count, asciiEqualIgnoringCase(ArraySlice(name), known[...]) { present[k] = true }
                }
            }
            opened.withIdentityFields { RenderedFields.forEach($0, mark) }
            opened.assertionField.withUnsafeBytes { RenderedFields.forEach($0, mark) }
        }
        var value: [UInt8] = []
        for (k, name) in identityNames.enumerated() where !present[k] {
            if !value.isEmpty { value += Array(", ".utf8) }
            value += name
        }
        if !alwaysRemoved.isEmpty {
            if !value.isEmpty { value += Array(", ".utf8) }
            value += alwaysRemoved
        }
        if identity.stripBearer { value += Array(", authorization".utf8) }
        return value
    }
}
