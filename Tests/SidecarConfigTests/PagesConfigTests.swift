import XCTest
import SidecarConfig

/// `pages.*`: defaults, a template directory, and errors at
/// the key's line and column like every other key.
final class PagesConfigTests: XCTestCase {
    func testDefaultsKeepTheRedirectAndTheBuiltInPages() throws {
        let config = try parse(minimal(plus: ""))
        XCTAssertFalse(config.pages.signIn)
        XCTAssertNil(config.pages.templates)
    }

    func testSignInAndATemplateDirectory() throws {
        let directory = try Fixture.directory(self)
        try FileManager.default.createDirectory(atPath: directory + "/my-pages", withIntermediateDirectories: true)
        let config = try parse(minimal(plus: "pages:\n  sign_in: true\n  templates: \(directory)/my-pages\n"))
        XCTAssertTrue(config.pages.signIn)
        XCTAssertEqual(config.pages.templates, directory + "/my-pages")
    }

    func testTemplatesMustBeAnExistingDirectory() throws {
        let directory = try Fixture.directory(self)
        try "x".write(toFile: directory + "/file.html", atomically: true, encoding: .utf8)
        for (value, expected) in [(directory + "/missing-dir", "cannot read"), (directory + "/file.html", "is not a directory")] {
            let errors = try errors(minimal(plus: "pages:\n  templates: \(value)\n"))
            XCTAssertEqual(errors.count, 1, "\(errors)")
            XCTAssertEqual(errors.first?.path, "pages.templates")
            XCTAssertEqual(errors.first.map { [$0.line, $0.column] }, [12, 14])
            XCTAssertTrue(errors.first?.message.contains(expected) ?? false, "\(errors)")
        }
    }

    func testUnknownAndMistypedKeysAreErrors() throws {
        let unknown = try errors(minimal(plus: "pages:\n  sign_on: true\n"))
        XCTAssertEqual(unknown.map(\.path), ["pages.sign_on"])
        XCTAssertEqual(unknown.first?.kind, .unknownKey)
        let mistyped = try errors(minimal(plus: "pages:\n  sign_in: yes please\n"))
        XCTAssertEqual(mistyped.map(\.path), ["pages.sign_in"])
    }
}
