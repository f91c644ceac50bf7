import SidecarEvent
import SidecarHTTP

/// One request on a client connection and what became of it, from its head to its access
/// line. Stored inline in the connection (no allocation per request) and reset whole when
/// the exchange ends, so no field outlives its request; the course (keep-alive, retries) is
/// the state machine's.
struct Exchange {
    var request: HTTPRequestHead?
    /// Scalars of `request`, read on every callback without touching the stored head (an
    /// optional-chained read of it copies the head: two retains and two releases).
    var facts = RequestFacts()
    var path: [UInt8] = []
    var requestId: [UInt8] = []
    /// The request's trace: continued from the client or started here, decided with the
    /// request id.
    var trace = TraceContext()
    /// The request's span and its upstream span (a sampled exchange whose spans are exported).
    var spans = ExchangeSpans()
    /// The session of the request and the credentials to strip.
    var identity = RequestIdentity()
    var startedMs: Int64 = 0
    var lastProgressMs: Int64 = 0

    var requestRelay: BodyRelay?
    /// A chunked request body's trailer section, passed on upstream (`BodyRelay`).
    var requestTrailers: BodyRelay.TrailerSection?
    /// Which upstream, the connection leased from its pool, the queue, the replay copy.
    var leg = UpstreamLeg()
    /// The `set_headers` of the rule that decided the request (`RuleHeaders`; 0: none).
    var ruleHeaders: RuleHeaders.Group = 0
    /// With `sites`: the site the request's host named (as `Config.sites` lists them); -1: none.
    var site = -1
    /// Set once the upstream's (final or 101) response head arrived: whether the upstream
    /// connection may carry another exchange. Scalars only: keeping the head would keep
    /// (and copy, retain and release) its arrays for the whole exchange.
    var response: UpstreamResponse?
    var responseRelay: BodyRelay?
    /// A chunked response body's trailer section, passed on to the client.
    var responseTrailers: BodyRelay.TrailerSection?
    var status = 0
    var bytesSent: UInt64 = 0
    /// Set when the exchange ended before its response was complete.
    var incomplete: IncompleteReason?
    /// The sidecar answered 502/504 because the upstream failed (counted under the upstream).
    var upstreamFailure = false
    /// How long the client has read nothing while the upstream is held back for it.
    var clientSend = ClientSendWatch()

    /// `LocalResponse.userID` of the answer, for its access line.
    var actedForUser: String?

    /// The upstream connection the exchange holds (`leg`'s).
    var upstream: UpstreamConnection? { leg.connection }

    /// Makes this the next exchange: every field back to its start, keeping the capacity of
    /// the path, the request id and the cookie scratch (a fresh array per request would be an
    /// allocation per request). Field by field rather than `self = Exchange()`: assigning
    /// the whole 600-byte value costs about three times as many instructions per request.
    /// `ExchangeTests` fails when a field is added here without being reset. Returns the
    /// request head, whose arrays the worker reuses.
    mutating func reset() -> HTTPRequestHead? {
        // Most fields are already empty when an exchange ends (the relays and the upstream
        // lease are let go as the response completes): each is checked before it is written,
        // which skips the store and the release of an old value on every request.
        let head = request.take()
        facts = RequestFacts()
        if !path.isEmpty { path.removeAll(keepingCapacity: true) }
        if !requestId.isEmpty { requestId.removeAll(keepingCapacity: true) }
        trace = TraceContext()
        spans = ExchangeSpans()
        identity.reset()
        startedMs = 0
        lastProgressMs = 0
        if requestRelay != nil { requestRelay = nil }
        if requestTrailers != nil { requestTrailers = nil }
        leg.reset()
        ruleHeaders = 0
        site = -1
        response = nil
        if responseRelay != nil { responseRelay = nil }
        if responseTrailers != nil { responseTrailers = nil }
        status = 0
        bytesSent = 0
        incomplete = nil
        upstreamFailure = false
        clientSend = ClientSendWatch()
        if actedForUser != nil { actedForUser = nil }
        return head
    }
}

/// What the connection keeps of an upstream response head once it was written to the client.
struct UpstreamResponse {
    var keepAlive: Bool
}

/// The scalars of a request head the connection consults while the exchange runs.
struct RequestFacts {
    /// False between exchanges and for a refused head.
    var present = false
    var method = HTTPMethod.get
    var version = HTTPVersion.http11
    var framing = BodyFraming.none
    /// A validated upgrade request.
    var upgrade = false

    init() {}

    init(_ head: HTTPRequestHead) {
        present = true
        method = head.method
        version = head.version
        framing = head.framing
        upgrade = head.connection.upgrade && head.upgradesToWebSocket
    }
}
