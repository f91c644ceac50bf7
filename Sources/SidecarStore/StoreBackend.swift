import SidecarEvent

/// The answer to a store change: the value, or why it did not happen.
public typealias StoreCompletion<Value> = (Result<Value, StoreError>) -> Void

/// What the sidecar keeps across requests: revocations, single-use keys with an
/// expiry, and notification forwards not yet delivered. Back-ends: `MemoryStore`,
/// `FileStore` and `RedisStore` (shared between replicas).
///
/// Changes are completion-based because a shared store answers over the network. Called on
/// a running event loop, a completion runs on that loop's thread and never before the call
/// returned — on a later turn for the memory and file stores, when the answer arrives for a
/// networked one (which therefore keeps a connection per worker loop, as the Apple client
/// does). A caller may thus finish its own bookkeeping after the call, and a completion
/// cannot find it half done. Completions are not `@Sendable`: they never change threads.
/// Off any running loop (a tool, a test) there is no later turn: the memory and file stores
/// then complete before returning, and `SynchronousStore` offers plain calls for that use.
///
/// The one question on the request path — is this session revoked? — is not here: it is
/// answered from memory by a `RevocationView` over `revocations`, which every back-end keeps
/// current, so checking a session never waits on a disk or the network.
///
/// Times are Unix seconds unless a name says `Ms`.
public protocol StoreBackend: AnyObject, Sendable {
    /// The revocations in memory; workers read them through `makeRevocationView()`.
    var revocations: RevocationSet { get }
    /// For `/readyz` and the start-up log.
    var health: StoreHealth { get }
    /// For `/metrics`; never waits for a write in progress.
    var metrics: StoreMetrics { get }
    /// What opening found and repaired (a torn last record dropped, a corrupt record
    /// skipped): one line each, for the start-up log. Empty for a clean open.
    var openingNotes: [String] { get }
    /// The file this open created (a first start): news for the log, not a warning.
    var createdFile: String? { get }

    /// Revokes one session (logout) until its own expiry; an expired one needs nothing.
    func revokeSession(id: [UInt8], expiresAt: Int64, completion: @escaping StoreCompletion<Void>)

    /// Revokes every session of `subject` issued at or before `issuedAtOrBeforeMs` (Unix
    /// milliseconds: Apple's `event_time`), remembered until `keepUntil` — the time by which
    /// all such sessions have expired (cutoff + the longest session lifetime). Revoking a
    /// subject again keeps the later cutoff.
    func revokeSubject(
        _ subject: String, issuedAtOrBeforeMs: Int64, keepUntil: Int64, completion: @escaping StoreCompletion<Void>)

    /// Claims a single-use key until `expiresAt`: `.claimed` exactly once while unexpired.
    /// Keys of exactly 16 bytes are used as they are, others are SHA-256'd to 16 bytes.
    /// A key already expired is not remembered (the caller refuses expired tokens itself).
    func claim(
        _ namespace: ClaimNamespace, key: [UInt8], expiresAt: Int64, completion: @escaping (ClaimResult) -> Void)

    /// Queues a notification forward until `ackForward`; fails with `.forwardQueueFull`
    /// when the queue is at its bound (log it: the event would otherwise be lost).
    func enqueueForward(payload: [UInt8], completion: @escaping StoreCompletion<ForwardID>)
    /// The upstream took it (or the forwarder gave up on it): forget it. Unknown ids succeed.
    func ackForward(_ id: ForwardID, completion: @escaping StoreCompletion<Void>)
    /// A delivery attempt failed: counted, with its time, for a back-off that survives a
    /// restart. Unknown ids succeed.
    func recordForwardAttempt(_ id: ForwardID, completion: @escaping StoreCompletion<Void>)
    /// Every forward not yet acknowledged, oldest first.
    func pendingForwards(completion: @escaping StoreCompletion<[PendingForward]>)

    /// Remembers `subject`'s sign-in (for `sidecar users show`): when and on what. Kept
    /// `SignInRecord.retentionSeconds`; durable with the file and Redis stores.
    func recordSignIn(_ subject: String, _ signIn: SignInRecord, completion: @escaping StoreCompletion<Void>)
    /// `subject`'s last sign-in, nil when none is remembered.
    func lastSignIn(_ subject: String, completion: @escaping StoreCompletion<SignInRecord?>)

    /// Keeps `subject`'s latest Apple refresh token, sealed (`users.keep_refresh_tokens`),
    /// replacing an older one; kept as long as a sign-in is.
    func keepRefreshToken(_ subject: String, _ token: KeptRefreshToken, completion: @escaping StoreCompletion<Void>)
    /// `subject`'s kept token, nil when none is kept.
    func keptRefreshToken(_ subject: String, completion: @escaping StoreCompletion<KeptRefreshToken?>)
    /// Forgets `subject`'s kept token (revoked at Apple, or the account deleted).
    func forgetRefreshToken(_ subject: String, completion: @escaping StoreCompletion<Void>)

    /// Releases the file or connection; later changes fail with `.closed`.
    func close()

    /// Called on each worker's thread as its loop starts (and `detach` as it ends): a
    /// networked store opens that loop's connection, so changes made on it complete there.
    func attach(to loop: EventLoop)
    func detach()
}

extension StoreBackend {
    public func attach(to loop: EventLoop) {}
    public func detach() {}

    /// A view for one worker's thread (see `RevocationView`).
    public func makeRevocationView() -> RevocationView { RevocationView(revocations) }

    /// `claim` with the bytes of a string (a login state, a nonce, a `jti`).
    public func claim(
        _ namespace: ClaimNamespace, key: String, expiresAt: Int64, completion: @escaping (ClaimResult) -> Void
    ) {
        claim(namespace, key: Array(key.utf8), expiresAt: expiresAt, completion: completion)
    }
}

/// A back-end that finishes every change before returning (memory, file). It offers the
/// changes as plain throwing calls too — for tests and tools; the sidecar itself goes
/// through `StoreBackend` so a networked back-end can take their place, and gets each
/// answer on the loop's next turn as a networked back-end would give it.
public protocol SynchronousStore: StoreBackend {
    func revokeSession(id: [UInt8], expiresAt: Int64) throws(StoreError)
    func revokeSubject(_ subject: String, issuedAtOrBeforeMs: Int64, keepUntil: Int64) throws(StoreError)
    func claim(_ namespace: ClaimNamespace, key: [UInt8], expiresAt: Int64) -> ClaimResult
    func enqueueForward(payload: [UInt8]) throws(StoreError) -> ForwardID
    func ackForward(_ id: ForwardID) throws(StoreError)
    func recordForwardAttempt(_ id: ForwardID) throws(StoreError)
    func pendingForwards() throws(StoreError) -> [PendingForward]
    func recordSignIn(_ subject: String, _ signIn: SignInRecord) throws(StoreError)
    func lastSignIn(_ subject: String) throws(StoreError) -> SignInRecord?
    func keepRefreshToken(_ subject: String, _ token: KeptRefreshToken) throws(StoreError)
    func keptRefreshToken(_ subject: String) throws(StoreError) -> KeptRefreshToken?
    func forgetRefreshToken(_ subject: String) throws(StoreError)
}

extension SynchronousStore {
    /// `claim` with the bytes of a string.
    public func claim(_ namespace: ClaimNamespace, key: String, expiresAt: Int64) -> ClaimResult {
        claim(namespace, key: Array(key.utf8), expiresAt: expiresAt)
    }

    public func revokeSession(id: [UInt8], expiresAt: Int64, completion: @escaping StoreCompletion<Void>) {
        answerLater(Result { () throws(StoreError) in try revokeSession(id: id, expiresAt: expiresAt) }, completion)
    }

    public func revokeSubject(
        _ subject: String, issuedAtOrBeforeMs: Int64, keepUntil: Int64, completion: @escaping StoreCompletion<Void>
    ) {
        let result = Result { () throws(StoreError) in
            try revokeSubject(subject, issuedAtOrBeforeMs: issuedAtOrBeforeMs, keepUntil: keepUntil)
        }
        answerLater(result, completion)
    }

    public func claim(
        _ namespace: ClaimNamespace, key: [UInt8], expiresAt: Int64, completion: @escaping (ClaimResult) -> Void
    ) {
        answerLater(claim(namespace, key: key, expiresAt: expiresAt), completion)
    }

    public func enqueueForward(payload: [UInt8], completion: @escaping StoreCompletion<ForwardID>) {
        answerLater(Result { () throws(StoreError) in try enqueueForward(payload: payload) }, completion)
    }

    public func ackForward(_ id: ForwardID, completion: @escaping StoreCompletion<Void>) {
        answerLater(Result { () throws(StoreError) in try ackForward(id) }, completion)
    }

    public func recordForwardAttempt(_ id: ForwardID, completion: @escaping StoreCompletion<Void>) {
        answerLater(Result { () throws(StoreError) in try recordForwardAttempt(id) }, completion)
    }

    public func pendingForwards(completion: @escaping StoreCompletion<[PendingForward]>) {
        answerLater(Result { () throws(StoreError) in try pendingForwards() }, completion)
    }

    public func recordSignIn(_ subject: String, _ signIn: SignInRecord, completion: @escaping StoreCompletion<Void>) {
        answerLater(Result { () throws(StoreError) in try recordSignIn(subject, signIn) }, completion)
    }

    public func lastSignIn(_ subject: String, completion: @escaping StoreCompletion<SignInRecord?>) {
        answerLater(Result { () throws(StoreError) in try lastSignIn(subject) }, completion)
    }

    public func keepRefreshToken(_ subject: String, _ token: KeptRefreshToken, completion: @escaping StoreCompletion<Void>) {
        answerLater(Result { () throws(StoreError) in try keepRefreshToken(subject, token) }, completion)
    }

    public func keptRefreshToken(_ subject: String, completion: @escaping StoreCompletion<KeptRefreshToken?>) {
        answerLater(Result { () throws(StoreError) in try keptRefreshToken(subject) }, completion)
    }

    public func forgetRefreshToken(_ subject: String, completion: @escaping StoreCompletion<Void>) {
        answerLater(Result { () throws(StoreError) in try forgetRefreshToken(subject) }, completion)
    }
}

/// A sign-in a store can record: a subject within the codec's bounds, a short platform name.
func checkSignIn(_ subject: String, _ signIn: SignInRecord) throws(StoreError) {
    try checkSubject(subject)
    guard !signIn.platform.isEmpty, signIn.platform.utf8.count <= SignInRecord.maximumPlatformBytes else {
        throw .invalidArgument("sign-in platform empty or over \(SignInRecord.maximumPlatformBytes) bytes")
    }
}

/// The change is done; its answer waits for the loop's next turn (see `StoreBackend`).
func answerLater<Value>(_ value: Value, _ completion: @escaping (Value) -> Void) {
    guard let loop = EventLoop.current else { return completion(value) }
    loop.nextTurn.run { completion(value) }
}
