import SidecarHTTPClient
import SidecarEvent

/// One HTTP answer from the CA (status, fields, the body up to the client's limit).
public typealias ACMEHTTPResponse = AppleHTTPResponse

/// How the ACME client reaches the CA. Blocking: the ACME work runs on a thread of its own,
/// never on a worker's loop, and reads as the protocol's steps in order. The tests give a
/// scripted transport, the sidecar a `LoopTransport`.
public protocol ACMETransport: AnyObject {
    func get(_ url: ACMEURL) throws(ACMEError) -> ACMEHTTPResponse
    /// A JWS body (`application/jose+json`).
    func post(_ url: ACMEURL, jose body: [UInt8]) throws(ACMEError) -> ACMEHTTPResponse
}

/// The transport over the project's HTTPS client (full certificate and host-name
/// verification, a deadline per request, bounded bodies), on the ACME thread's own loop,
/// which runs only while a request or a sleep is waited for.
public final class LoopTransport: ACMETransport {
    public let waiter: LoopWaiter
    private let caFile: String?
    private var clients: [String: AppleHTTPClient] = [:]

    public init(waiter: LoopWaiter, caFile: String?) {
        self.waiter = waiter
        self.caFile = caFile
    }

    public func get(_ url: ACMEURL) throws(ACMEError) -> ACMEHTTPResponse {
        try send(url, AppleHTTPRequest(method: .GET, path: url.target))
    }

    public func post(_ url: ACMEURL, jose body: [UInt8]) throws(ACMEError) -> ACMEHTTPResponse {
        try send(url, AppleHTTPRequest(method: .POST, path: url.target, contentType: "application/jose+json", body: body))
    }

    /// Lets go of the clients (their resolvers live on the loop); a request still under way
    /// keeps its own client until the loop is gone with the thread.
    public func close() { clients.removeAll() }

    private func send(_ url: ACMEURL, _ request: AppleHTTPRequest) throws(ACMEError) -> ACMEHTTPResponse {
        let client = try self.client(for: url)
        guard let result: AppleHTTPResult = waiter.waitUnlessStopped({ done in client.send(request, completion: done) }) else {
            throw ACMEError(.stopped, "acme: stopping")
        }
        switch result {
        case .response(let response): return response
        case .failure(let failure): throw ACMEError(.transport, "acme: \(url): \(failure.reason)")
        }
    }

    private func client(for url: ACMEURL) throws(ACMEError) -> AppleHTTPClient {
        if let client = clients[url.origin] { return client }
        do {
            let endpoint = try AppleEndpoint(baseURL: url.origin)
            let client = try AppleHTTPClient(
                base: waiter.loop.base,
                configuration: .init(endpoint: endpoint, caFile: caFile, connectTimeout: 10, totalTimeout: 30,
                                     maxBodyBytes: ACMEJSON.maxBytes))
            clients[url.origin] = client
            return client
        } catch {
            throw ACMEError(.local, "acme: cannot reach \(url.origin): \(error)")
        }
    }
}

/// Runs the ACME thread's loop until one thing is done: a request answered or a sleep over;
/// whatever else is on the loop (the HTTP-01 listener) is served meanwhile. Between waits the
/// loop does not run. The thread is never joined: it ends with the process.
public final class LoopWaiter {
    public let loop: EventLoop
    /// Set by `stop()`: no wait starts any more, and the one under way returns at once.
    public private(set) var isStopped = false

    public init(loop: EventLoop) { self.loop = loop }

    /// Ends the wait under way and every later one; on the loop's thread (the ACME thread's
    /// stop wake-up calls it when the process stops, so that the thread can be joined).
    public func stop() {
        isStopped = true
        loop.stop()
    }

    /// `start` begins the work; its completion (on this loop, never inside `start`) ends the
    /// wait. nil when the waiter is stopped, before the wait or during it: the work is then
    /// abandoned with the loop.
    public func waitUnlessStopped<T>(_ start: (@escaping (T) -> Void) -> Void) -> T? {
        guard !isStopped else { return nil }
        var result: T?
        start { [loop] value in
            result = value
            loop.stop()
        }
        // A guard timer keeps the loop from returning for want of events (and spinning).
        let guardTimer = Timer(loop: loop) {}
        guardTimer.schedule(afterMilliseconds: 3_600_000)
        defer { guardTimer.cancel() }
        while result == nil, !isStopped { loop.run() }
        return result
    }

    /// As `waitUnlessStopped`, for a waiter nobody stops (a command-line run on its own loop).
    public func wait<T>(_ start: (@escaping (T) -> Void) -> Void) -> T {
        guard let result = waitUnlessStopped(start) else { preconditionFailure("a LoopWaiter that waits to the end was stopped") }
        return result
    }

    /// Sleeps `milliseconds` while the loop serves whatever else is on it (the HTTP-01
    /// answers); returns early when the waiter is stopped.
    public func sleep(milliseconds: Int64) {
        let timer = Timer(loop: loop)
        let _: Void? = waitUnlessStopped { done in
            timer.onFire { done(()) }
            timer.schedule(afterMilliseconds: max(1, milliseconds))
        }
        timer.cancel()
    }
}
