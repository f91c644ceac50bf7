import CEvent
import COpenSSL
import Glibc

/// The BIO between a TLS stream's `SSL` and its socket. Reads are one `recv` into OpenSSL's
/// buffer (read-ahead asks for whole socket buffers); writes never touch the socket: the
/// records are appended to the stream's `wire` queue, which goes out like a plain stream's
/// `output` — `send`/`sendmsg`, or with the other streams of the loop iteration in one
/// io_uring call. So HTTPS pays one system call per iteration for its writes where a socket
/// BIO pays a `write(2)` per record, and a record that would block waits in `wire` (OpenSSL
/// never sees a blocked write: `SSL_ERROR_WANT_WRITE` does not occur).
///
/// The BIO's data is the stream, unretained: the stream owns the `SSL` and frees it (and
/// with it this BIO) before it frees `wire`, so no callback outlives them.
enum TLSWireBIO {
    /// Made once, never changed after: OpenSSL reads a BIO_METHOD from any thread.
    nonisolated(unsafe) private static let method: OpaquePointer? = {
        guard let method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "sidecar stream") else { return nil }
        _ = BIO_meth_set_read_ex(method) { bio, buffer, length, readBytes in
            guard let bio, let buffer, let readBytes, let data = BIO_get_data(bio) else { return 0 }
            BIO_clear_flags(bio, BIO_FLAGS_READ | BIO_FLAGS_WRITE | BIO_FLAGS_IO_SPECIAL | BIO_FLAGS_SHOULD_RETRY)
            let stream = Unmanaged<Stream>.fromOpaque(data).takeUnretainedValue()
            let count = recv(stream.fd, buffer, length, 0)
            if count > 0 {
                readBytes.pointee = count
                return 1
            }
            if count == 0 {
                BIO_set_flags(bio, BIO_FLAGS_IN_EOF)
            } else if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR {
                BIO_set_flags(bio, BIO_FLAGS_READ | BIO_FLAGS_SHOULD_RETRY)
            }
            return 0  // errno stays for SSL_ERROR_SYSCALL
        }
        _ = BIO_meth_set_write_ex(method) { bio, bytes, length, written in
            guard let bio, let bytes, let written, let data = BIO_get_data(bio) else { return 0 }
            let stream = Unmanaged<Stream>.fromOpaque(data).takeUnretainedValue()
            guard stream.wire.append(bytes, count: length) else { return 0 }
            written.pointee = length
            return 1
        }
        _ = BIO_meth_set_ctrl(method) { bio, command, _, _ in
            switch command {
            case BIO_CTRL_FLUSH: return 1  // `wire` is sent by the stream's own flush
            case BIO_CTRL_EOF: return bio.map { BIO_test_flags($0, BIO_FLAGS_IN_EOF) != 0 ? 1 : 0 } ?? 0
            default: return 0
            }
        }
        _ = BIO_meth_set_create(method) { bio in
            BIO_set_init(bio, 1)
            return 1
        }
        return method
    }()

    /// Connects `ssl` to `stream`'s socket and `wire`; false when OpenSSL could not make the BIO.
    static func attach(_ ssl: OpaquePointer, to stream: Stream) -> Bool {
        guard let method, let bio = BIO_new(method) else { return false }
        BIO_set_data(bio, Unmanaged.passUnretained(stream).toOpaque())
        SSL_set_bio(ssl, bio, bio)  // one reference, given to the SSL for both directions
        return true
    }
}
