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

    private func send(_ url: ACMEURL, _ request: AppleHTTPRequest) throws(ACMEError) -> ACMEHTTPResponse {
        let client = try self.client(for: url)
        let result: AppleHTTPResult = waiter.wait { done in client.send(request, completion: done) }
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

    public init(loop: EventLoop) { self.loop = loop }

    /// `start` begins the work; its completion (on this loop, never inside `start`) ends the wait.
    public func wait<T>(_ start: (@escaping (T) -> Void) -> Void) -> T {
        var result: T?
        start { [loop] value in
            result = value
            loop.stop()
        }
        // A guard timer keeps the loop from returning for want of events (and spinning).
        let guardTimer = Timer(loop: loop) {}
        guardTimer.schedule(afterMilliseconds: 3_600_000)
        defer { guardTimer.cancel() }
        while result == nil { loop.run() }
        return result!
    }

    /// Sleeps `milliseconds` while the loop serves whatever else is on it (the HTTP-01 answers).
    public func sleep(milliseconds: Int64) {
        let timer = Timer(loop: loop)
        let _: Void = wait { done in
            timer.onFire { done(()) }
            timer.schedule(afterMilliseconds: max(1, milliseconds))
        }
    }
}
