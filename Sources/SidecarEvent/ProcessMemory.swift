import CEvent

/// The C allocator's view of the process, for owners that return memory after a burst.
public enum ProcessMemory {
    /// Hands the free pages of every glibc arena back to the kernel (`malloc_trim(0)`).
    public static func trim() { _ = malloc_trim(0) }
}
