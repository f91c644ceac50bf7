import SidecarRESP

/// What the sentinels and the data nodes say about who is master, read from their replies.
/// Pure, no I/O.
enum SentinelReplies {
    /// Where a sentinel says a master is.
    struct MasterAddress: Equatable, Sendable, CustomStringConvertible {
        var host: String
        var port: UInt16

        var description: String { RedisPeer.hostPort(host, port) }
    }

    enum Lookup: Equatable {
        case master(MasterAddress)
        /// The sentinel watches no master by that name (a null reply).
        case unknownMaster
        /// An error reply, or a reply that is not an address.
        case refused(String)
    }

    /// `SENTINEL get-master-addr-by-name <name>`: `[ip, port]`, or null for an unknown name.
    static func masterAddress(_ reply: RESPValue) -> Lookup {
        switch reply {
        case .array(nil), .bulk(nil): return .unknownMaster
        case .error(let message): return .refused(message)
        case .array(let parts?) where parts.count == 2:
            guard let hostBytes = parts[0].bytes, let portBytes = parts[1].bytes,
                  let host = hostName(hostBytes), let port = port(portBytes)
            else { return .refused("not an address: \(reply)") }
            return .master(MasterAddress(host: host, port: port))
        default: return .refused("not an address: \(reply)")
        }
    }

    /// A `+switch-master` message: `<name> <old-ip> <old-port> <new-ip> <new-port>`; nil for
    /// anything else.
    static func switchMaster(_ payload: [UInt8]) -> (name: String, old: MasterAddress, new: MasterAddress)? {
        let fields = payload.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: true)
        guard fields.count == 5, let oldHost = hostName(Array(fields[1])), let oldPort = port(Array(fields[2])),
              let newHost = hostName(Array(fields[3])), let newPort = port(Array(fields[4]))
        else { return nil }
        return (String(decoding: fields[0], as: UTF8.self), MasterAddress(host: oldHost, port: oldPort),
                MasterAddress(host: newHost, port: newPort))
    }

    /// `ROLE`'s first element must be `master`: nil then, else why the server is refused.
    static func roleRefusal(_ reply: RESPValue) -> String? {
        guard case .array(let parts?) = reply, let first = parts.first?.bytes else {
            return "did not answer ROLE with a role"
        }
        let role = String(decoding: first, as: UTF8.self)
        if role == "master" { return nil }
        return "is a \(role == "slave" ? "replica" : role) (ROLE \(role)), not the master"
    }

    /// A host as a sentinel reports it: an IP or a name, nothing that could smuggle a
    /// separator into a log line or a TLS name.
    private static func hostName(_ bytes: [UInt8]) -> String? {
        guard !bytes.isEmpty, bytes.count <= 253 else { return nil }
        let allowed = bytes.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ":")
                || byte == UInt8(ascii: "_")
        }
        return allowed ? String(decoding: bytes, as: UTF8.self) : nil
    }

    private static func port(_ bytes: [UInt8]) -> UInt16? {
        guard !bytes.isEmpty, bytes.count <= 5, bytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let value = Int(String(decoding: bytes, as: UTF8.self)), value > 0, value <= 65535
        else { return nil }
        return UInt16(value)
    }
}
