import Glibc

/// The standard `process_*` families every Prometheus exporter has (CPU, memory, descriptors,
/// start time) and `sidecar_build_info`, read from the kernel when `/metrics` is scraped —
/// on the admin loop, never on a worker.
enum ProcessMetrics {
    /// When the process started (Unix seconds, with fractions), taken once at start-up.
    nonisolated(unsafe) static var startTime: Double = {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }()

    static func render(version: String) -> String {
        var out = ""
        func family(_ name: String, _ type: String, _ help: String, _ value: String) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n\(name) \(value)\n"
        }
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let cpu = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        family("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", "\(cpu)")
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        if let statm = readSmallFile("/proc/self/statm") {
            let fields = statm.split(separator: " ")
            if fields.count >= 2, let pages = Int(fields[0]), let resident = Int(fields[1]) {
                family("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", "\(pages * pageSize)")
                family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", "\(resident * pageSize)")
            }
        }
        family("process_open_fds", "gauge", "Number of open file descriptors.", "\(openDescriptors())")
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 {
            family("process_max_fds", "gauge", "Maximum number of open file descriptors (soft limit).", "\(limit.rlim_cur)")
        }
        family("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.",
               "\(startTime)")
        out += "# HELP sidecar_build_info The running build: version and the Swift it was built with.\n"
        out += "# TYPE sidecar_build_info gauge\n"
        out += "sidecar_build_info{version=\"\(escapeLabel(version))\"} 1\n"
        return out
    }

    private static func openDescriptors() -> Int {
        guard let dir = opendir("/proc/self/fd") else { return 0 }
        defer { closedir(dir) }
        var count = 0
        while let entry = readdir(dir) {
            if entry.pointee.d_name.0 != UInt8(ascii: ".") { count += 1 }
        }
        return max(0, count - 1)  // not the descriptor opendir itself holds
    }

    private static func readSmallFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        return String(decoding: buffer[..<n], as: UTF8.self).trimmingCharacters()
    }

    private static func escapeLabel(_ value: String) -> String {
        var out = ""
        for c in value {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out
    }
}

private extension String {
    func trimmingCharacters() -> String {
        var s = Substring(self)
        while let last = s.last, last == "\n" || last == " " { s = s.dropLast() }
        return String(s)
    }
}
