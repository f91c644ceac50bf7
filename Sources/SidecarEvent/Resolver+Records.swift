import CEvent
import Glibc

extension Resolver {
    /// One lookup of a name's A and AAAA records, in flight. Each of libevent's two requests
    /// holds it (through a `RecordRequest`) until libevent reports that request, a
    /// cancellation included, as `Lookup` is held.
    public final class RecordLookup {
        fileprivate weak var resolver: Resolver?
        fileprivate let host: String
        fileprivate let port: UInt16
        fileprivate var requests: [OpaquePointer?] = [nil, nil]
        fileprivate var pending = 2
        fileprivate var cancelled = false
        fileprivate var addresses: [SocketAddress] = []
        fileprivate var ttl: Int?
        fileprivate var completion: (([SocketAddress], Int?) -> Void)?
        /// Through `lookup` (the hosts file), once the records found nothing.
        fileprivate var fallback: Lookup?

        fileprivate init(resolver: Resolver, host: String, port: UInt16, completion: @escaping ([SocketAddress], Int?) -> Void) {
            self.resolver = resolver
            self.host = host
            self.port = port
            self.completion = completion
        }

        /// libevent has reported both requests (or their cancellation), and any fallback ended.
        public var isFinished: Bool { pending == 0 && (fallback?.isFinished ?? true) }

        /// The completion will not run.
        public func cancel() {
            completion = nil
            fallback?.cancel()
            guard !cancelled, let resolver else { return }
            cancelled = true
            for case let request? in requests { evdns_cancel_request(resolver.dns, request) }
        }

        fileprivate func report(_ index: Int, result: Int32, type: Int32, count: Int32, ttl: Int32, data: UnsafeMutableRawPointer?) {
            requests[index] = nil
            pending -= 1
            if result == DNS_ERR_NONE, count > 0, let data {
                for entry in 0..<Int(count) {
                    if let address = Self.address(type: type, data: data, entry: entry, port: port) { addresses.append(address) }
                }
                self.ttl = min(self.ttl ?? Int.max, Int(max(0, ttl)))
            }
            guard pending == 0, let completion else { return }
            if addresses.isEmpty, let resolver, resolver.readsHostsFile {
                // Not in DNS: the hosts file may have it, as getaddrinfo reads it (no TTL there).
                fallback = resolver.lookup(host, port: port) { [weak self] found in
                    guard let self, let completion = self.completion else { return }
                    self.completion = nil
                    completion(found, nil)
                }
                return
            }
            self.completion = nil
            completion(addresses, addresses.isEmpty ? nil : self.ttl)
        }

        private static func address(type: Int32, data: UnsafeMutableRawPointer, entry: Int, port: UInt16) -> SocketAddress? {
            var storage = sockaddr_storage()
            let length: Int
            switch type {
            case DNS_IPv4_A:
                var inet = sockaddr_in()
                inet.sin_family = sa_family_t(AF_INET)
                inet.sin_port = port.bigEndian
                inet.sin_addr = data.loadUnaligned(fromByteOffset: entry * MemoryLayout<in_addr>.size, as: in_addr.self)
                withUnsafeMutableBytes(of: &storage) { dst in withUnsafeBytes(of: inet) { dst.copyMemory(from: $0) } }
                length = MemoryLayout<sockaddr_in>.size
            case DNS_IPv6_AAAA:
                var inet6 = sockaddr_in6()
                inet6.sin6_family = sa_family_t(AF_INET6)
                inet6.sin6_port = port.bigEndian
                inet6.sin6_addr = data.loadUnaligned(fromByteOffset: entry * MemoryLayout<in6_addr>.size, as: in6_addr.self)
                withUnsafeMutableBytes(of: &storage) { dst in withUnsafeBytes(of: inet6) { dst.copyMemory(from: $0) } }
                length = MemoryLayout<sockaddr_in6>.size
            default:
                return nil
            }
            return SocketAddress(storage: storage, length: socklen_t(length))
        }
    }

    /// What one of libevent's two requests carries back: the lookup, and which record it asked.
    private final class RecordRequest {
        let lookup: RecordLookup
        let index: Int
        init(_ lookup: RecordLookup, _ index: Int) {
            self.lookup = lookup
            self.index = index
        }
    }

    /// Looks up the A and AAAA records of `host` (its addresses at `port`), searching as
    /// `lookup` does; `completion` gets them with the shortest TTL among their records in
    /// seconds (nil: none found, or found in the hosts file, which has none), once, on the
    /// loop's thread (perhaps before this returns: an immediate failure), unless cancelled first.
    public func lookupRecords(_ host: String, port: UInt16, completion: @escaping ([SocketAddress], Int?) -> Void)
        -> RecordLookup
    {
        let lookup = RecordLookup(resolver: self, host: host, port: port, completion: completion)
        let callback: evdns_callback_type = { result, type, count, ttl, addresses, context in
            guard let context else { return }
            let request = Unmanaged<RecordRequest>.fromOpaque(context).takeRetainedValue()
            request.lookup.report(request.index, result: result, type: Int32(type), count: count, ttl: ttl, data: addresses)
        }
        for index in 0..<2 {
            let context = Unmanaged.passRetained(RecordRequest(lookup, index)).toOpaque()
            let request = index == 0
                ? evdns_base_resolve_ipv4(dns, host, 0, callback, context)
                : evdns_base_resolve_ipv6(dns, host, 0, callback, context)
            if let request {
                lookup.requests[index] = request  // libevent calls back later, never from here
            } else {
                // Refused at once (a name evdns cannot ask for): no callback will come.
                Unmanaged<RecordRequest>.fromOpaque(context).release()
                lookup.report(index, result: DNS_ERR_UNKNOWN, type: 0, count: 0, ttl: 0, data: nil)
            }
        }
        return lookup
    }
}
