/// Opens the store `spec` names: what the sidecar calls at start (and never again on a
/// reload — the store and its revocations outlive configuration changes).
///
/// Throws for a file store that cannot be used (see `FileStore.init`); log
/// `openingNotes` after it returns.
/// `onReadinessChange` hears a shared store become ready or unavailable (once per change);
/// `onNotice`, events an operator should see in the log (behind Sentinel: where the master
/// is, and each move of it).
public func openStore(
    _ spec: StoreSpec, limits: StoreLimits = StoreLimits(), clock: StoreClock = .system,
    onReadinessChange: @escaping @Sendable (Bool, String) -> Void = { _, _ in },
    onNotice: @escaping @Sendable (String) -> Void = { _ in }
) throws(StoreError) -> any StoreBackend {
    switch spec {
    case .memory: return MemoryStore(limits: limits, clock: clock)
    case .file(let path): return try FileStore(path: path, limits: limits, clock: clock)
    case .redis(let endpoint):
        return try RedisStore.open(endpoint, limits: limits, clock: clock, onReadinessChange: onReadinessChange,
                                   onNotice: onNotice)
    }
}
