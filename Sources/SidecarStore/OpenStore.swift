/// Opens the store `spec` names: what the sidecar calls at start (and never again on a
/// reload — the store and its revocations outlive configuration changes).
///
/// Throws for a file store that cannot be used (see `FileStore.init`); log
/// `openingNotes` after it returns.
public func openStore(
    _ spec: StoreSpec, limits: StoreLimits = StoreLimits(), clock: StoreClock = .system
) throws(StoreError) -> any StoreBackend {
    switch spec {
    case .memory: return MemoryStore(limits: limits, clock: clock)
    case .file(let path): return try FileStore(path: path, limits: limits, clock: clock)
    }
}
