// libFuzzer entry point for the SidecarHTTP codec. Built for fuzzing by `scripts/fuzz`
// (-DFUZZING, -sanitize=fuzzer,address); a normal build makes a corpus-replay tool that
// runs the files given as arguments through the same checks.
import SidecarHTTP

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    FuzzChecks.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

#if FUZZING
// SwiftPM links executables with `main` renamed to `<Module>_main`, so libFuzzer's own `main`
// is not used; this entry point hands control to libFuzzer's driver instead.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

@_cdecl("HTTPFuzz_main")
func fuzzMain(
    _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> CInt {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOneInput(data, size) }
}
#else
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@main enum Replay {
    static func main() {
        var count = 0
        for path in CommandLine.arguments.dropFirst() {
            guard let bytes = readFile(path) else {
                print("cannot read \(path)")
                exit(1)
            }
            bytes.withUnsafeBufferPointer { _ = fuzzOneInput($0.baseAddress, $0.count) }
            count += 1
        }
        print("replayed \(count) input(s) without a failed invariant")
    }

    static func readFile(_ path: String) -> [UInt8]? {
        guard let f = fopen(path, "rb") else { return nil }
        defer { fclose(f) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = fread(&chunk, 1, chunk.count, f)
            if n <= 0 { break }
            out.append(contentsOf: chunk[..<n])
        }
        return out
    }
}
#endif
