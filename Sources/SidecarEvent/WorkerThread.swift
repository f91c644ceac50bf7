import CEvent
import Glibc

/// A plain pthread running one body (typically an event loop) to completion.
public final class WorkerThread: @unchecked Sendable {
    private var thread = pthread_t()
    private final class Box { let body: @Sendable () -> Void; init(_ b: @escaping @Sendable () -> Void) { body = b } }

    public init(_ body: @escaping @Sendable () -> Void) throws(EventError) {
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        let rc = pthread_create(&thread, nil, { context in
            let box = Unmanaged<Box>.fromOpaque(context!).takeRetainedValue()
            box.body()
            return nil
        }, box)
        guard rc == 0 else {
            Unmanaged<Box>.fromOpaque(box).release()
            throw .system("pthread_create", errno: rc)
        }
    }

    public func join() { _ = pthread_join(thread, nil) }
}
