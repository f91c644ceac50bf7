import SidecarEvent

/// An `AppleEmulator` serving on its own thread and event loop — how `sidecar emulator`,
/// `sidecar demo` and in-process tests run it.
public final class RunningEmulator: Sendable {
    /// The bound address (the real port when 0 was asked for).
    public let address: SocketAddress
    /// The issuer in effect (`options.issuer`, or `http(s)://<address>` when that was empty).
    public let issuer: String
    private let channel: WakeupChannel
    private let thread: WorkerThread

    /// Binds `listen`, builds the emulator (errors surface here, synchronously) and starts
    /// serving on a new thread. An empty `options.issuer` becomes `http(s)://<bound address>`.
    public static func start(options: EmulatorOptions, listen: SocketAddress, tls: ServiceTLSContext? = nil,
                             serverOptions: ServiceServer.Options = ServiceServer.Options()) throws(EmulatorStartError)
        -> RunningEmulator
    {
        let fd: Int32
        do { fd = try Socket.listen(on: listen, reusePort: false) } catch { throw .listen(error) }
        let bound = Socket.localAddress(of: fd) ?? listen
        var options = options
        if options.issuer.isEmpty { options.issuer = (tls == nil ? "http://" : "https://") + bound.description }
        let runtime = Runtime()
        do {
            let loop = try EventLoop()
            runtime.loop = loop
            let emulator = try AppleEmulator(loop: loop, options: options)
            runtime.emulator = emulator
            runtime.server = emulator.serve(listeningFD: fd, tls: tls, serverOptions: serverOptions)
        } catch let error as EventError {
            Socket.close(fd)
            throw .listen(error)
        } catch let error as EmulatorConfigurationError {
            if runtime.server == nil { Socket.close(fd) }
            throw .configuration(error)
        } catch {
            throw .listen(.libevent("\(error)"))
        }
        let channel: WakeupChannel
        do { channel = try WakeupChannel() } catch { throw .listen(error) }
        runtime.wakeup = Wakeup(loop: runtime.loop!, channel: channel) { [unowned runtime] in
            runtime.server?.close()
            runtime.loop?.stop()
        }
        let thread: WorkerThread
        do { thread = try WorkerThread { runtime.run() } } catch { throw .listen(error) }
        return RunningEmulator(address: bound, issuer: options.issuer, channel: channel, thread: thread)
    }

    private init(address: SocketAddress, issuer: String, channel: WakeupChannel, thread: WorkerThread) {
        self.address = address
        self.issuer = issuer
        self.channel = channel
        self.thread = thread
    }

    /// Stops serving and waits for the thread to finish. Call once.
    public func stop() {
        channel.notify()
        thread.join()
    }

    /// Owns the loop's objects; built on the caller's thread, then used only by the worker.
    private final class Runtime: @unchecked Sendable {
        var loop: EventLoop?
        var emulator: AppleEmulator?
        var server: ServiceServer?
        var wakeup: Wakeup?

        func run() {
            loop?.run()
            // Release in dependency order: everything with libevent events before the loop.
            wakeup = nil
            server = nil
            emulator = nil
            loop = nil
        }
    }
}

public enum EmulatorStartError: Error, CustomStringConvertible {
    case listen(EventError)
    case configuration(EmulatorConfigurationError)

    public var description: String {
        switch self {
        case .listen(let error): error.description
        case .configuration(let error): error.description
        }
    }
}
