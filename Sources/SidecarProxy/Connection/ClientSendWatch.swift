/// While the upstream is held back for a slow client, how long the client has read nothing:
/// the client's send bound (`limits.idle_timeout`, nginx's `send_timeout`) applies to that,
/// not to the whole response. Stored inline in `Exchange` and reset with it.
struct ClientSendWatch {
    /// The client's `bytesWritten` at the last look, and when it last moved.
    private var written: UInt64 = 0
    private var movedMs: Int64 = 0

    /// The upstream is held back from now (`nowMs`), the client having taken `written` bytes.
    mutating func start(written: UInt64, nowMs: Int64) {
        self.written = written
        movedMs = nowMs
    }

    /// How long the client has taken nothing, now that it has taken `written` bytes in all.
    mutating func stalledMs(written: UInt64, nowMs: Int64) -> Int64 {
        if written != self.written {
            self.written = written
            movedMs = nowMs
        }
        return nowMs - movedMs
    }
}
