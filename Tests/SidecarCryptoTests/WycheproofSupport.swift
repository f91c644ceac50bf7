import Foundation
import XCTest
@testable import SidecarCrypto

/// Loads Wycheproof vector files from `../shared/vectors/wycheproof/` beside the package root.
enum Wycheproof {
    static var directory: URL {
        // #filePath = <root>/Tests/SidecarCryptoTests/WycheproofSupport.swift
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("shared/vectors/wycheproof")
    }

    static func load<T: Decodable>(_ name: String, as type: T.Type) throws -> T {
        let data = try Data(contentsOf: directory.appendingPathComponent(name))
        return try JSONDecoder().decode(T.self, from: data)
    }

    static func bytes(_ hex: String) throws -> [UInt8] {
        try XCTUnwrap(Hex.decode(hex), "bad hex in vector")
    }
}

struct WycheproofFile<Group: Decodable>: Decodable {
    let numberOfTests: Int
    let testGroups: [Group]
}

/// `result` of a test case: "valid", "invalid" or "acceptable".
enum WycheproofResult: String, Decodable {
    case valid, invalid, acceptable
}
