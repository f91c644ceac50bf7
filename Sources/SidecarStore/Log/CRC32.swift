/// CRC-32 (IEEE 802.3, the polynomial of zlib, gzip and PNG), table-driven.
///
/// The store log checks every record with it to tell a torn or rotted record from a good
/// one. A few lines of Swift instead of linking zlib: the project's rule is no new C
/// dependencies, and the table makes it fast enough to replay tens of MiB at start-up.
enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    /// The CRC-32 of `bytes`, continuing from `previous` (the CRC of what came before).
    static func checksum(_ bytes: UnsafeRawBufferPointer, continuing previous: UInt32 = 0) -> UInt32 {
        var crc = ~previous
        table.withUnsafeBufferPointer { table in
            for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        }
        return ~crc
    }

    static func checksum(_ bytes: [UInt8], continuing previous: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0, continuing: previous) }
    }
}
