import CEvent
import Glibc

/// Asynchronous DNS on one loop (libevent's evdns), name servers from a resolv.conf. Its owner
/// creates it on first use, so that hosts that need no lookup never touch DNS.
public final class Resolver {
    let dns: OpaquePointer
    /// Reads /etc/hosts as getaddrinfo does (the resolv.conf resolver; not a `nameserver` alone).
    let readsHostsFile: Bool

    /// Nil when the resolver could not be created.
    public init?(base: OpaquePointer, resolvConfPath: String) {
        guard let created = evdns_base_new(base, EVDNS_BASE_DISABLE_WHEN_INACTIVE) else { return nil }
        // A missing or empty file leaves evdns with its default (localhost) name server.
        let options = DNS_OPTION_SEARCH | DNS_OPTION_NAMESERVERS | DNS_OPTION_MISC | DNS_OPTION_HOSTSFILE
        _ = evdns_base_resolv_conf_parse(created, options, resolvConfPath)
        dns = created
        readsHostsFile = true
    }

    /// Asking `nameserver` (`ip` or `ip:port`) alone, as nginx's `resolver` does: no
    /// resolv.conf, no hosts file. Nil when the resolver could not be made or the address is refused.
    public init?(base: OpaquePointer, nameserver: String) {
        guard let created = evdns_base_new(base, EVDNS_BASE_DISABLE_WHEN_INACTIVE) else { return nil }
        guard evdns_base_nameserver_ip_add(created, nameserver) == 0 else {
            evdns_base_free(created, 0)
            return nil
        }
        dns = created
        readsHostsFile = false
    }

    /// Fails (and so releases) lookups still pending after a cancellation.
    deinit { evdns_base_free(dns, 1) }

    /// One lookup in flight. It outlives a cancellation until libevent reports it, which is
    /// why libevent's callback holds it rather than whoever asked.
    public final class Lookup {
        fileprivate var request: OpaquePointer?
        fileprivate var finished = false
        fileprivate var completion: (([SocketAddress]) -> Void)?

        fileprivate init(completion: @escaping ([SocketAddress]) -> Void) { self.completion = completion }

        /// libevent has reported the outcome (or the cancellation).
        public var isFinished: Bool { finished }

        /// The completion will not run.
        public func cancel() {
            completion = nil
            if !finished, let request { evdns_getaddrinfo_cancel(request) }
        }
    }

    /// Looks up the TCP addresses (IPv4 and IPv6) of `host`; `completion` gets them, none when
    /// the lookup failed, once on the loop's thread (perhaps before this returns: the hosts
    /// file, an immediate failure), unless the lookup is cancelled first.
    public func lookup(_ host: String, port: UInt16, completion: @escaping ([SocketAddress]) -> Void) -> Lookup {
        let lookup = Lookup(completion: completion)
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_protocol = Int32(IPPROTO_TCP)
        let request = evdns_getaddrinfo(dns, host, String(port), &hints, { code, info, context in
            guard let context else { return }
            let lookup = Unmanaged<Lookup>.fromOpaque(context).takeRetainedValue()
            defer { if let info { evutil_freeaddrinfo(info) } }
            lookup.finished = true
            lookup.request = nil
            guard code != EVUTIL_EAI_CANCEL, let completion = lookup.completion else { return }
            lookup.completion = nil
            var addresses: [SocketAddress] = []
            var next = code == 0 ? info : nil
            while let entry = next {
                if let address = SocketAddress(resolved: entry.pointee.ai_addr, length: entry.pointee.ai_addrlen) {
                    addresses.append(address)
                }
                next = entry.pointee.ai_next
            }
            completion(addresses)
        }, Unmanaged.passRetained(lookup).toOpaque())
        if !lookup.finished { lookup.request = request }
        return lookup
    }
}

extension SocketAddress {
    /// Copies an address a lookup returned; nil unless it is IPv4 or IPv6.
    init?(resolved address: UnsafeMutablePointer<sockaddr>?, length: socklen_t) {
        guard let address, length > 0, Int(length) <= MemoryLayout<sockaddr_storage>.size,
              address.pointee.sa_family == AF_INET || address.pointee.sa_family == AF_INET6
        else { return nil }
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { dst in
            dst.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(length)))
        }
        self.init(storage: storage, length: length)
    }
}
