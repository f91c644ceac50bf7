import CEventMemory

/// libevent's allocations (evbuffer chains above all) through a per-thread cache of blocks
/// (`CEventMemory`): the request path allocates four chains per request and frees them at the
/// end of the iteration, more at once than malloc's own per-thread cache keeps.
public enum EventMemory {
    /// Call first thing in a process, before any loop, queue or timer exists: memory libevent
    /// allocated before would later be freed by the other allocator. Later calls do nothing.
    public static func install() {
        _ = sidecar_event_memory_install()
    }
}
