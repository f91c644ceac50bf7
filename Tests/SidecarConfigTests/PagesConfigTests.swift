import XCTest
import SidecarConfig
import SidecarHTTP

/// `pages.*`: defaults, a template directory, and errors at
/// the key's line and column like every other key.
final class PagesConfigTests: XCTestCase {
    func testDefaultsKeepTheRedirectAndTheBuiltInPages() throws {
        let config = try parse(minimal(plus: ""))
        XCTAssertFalse(config.pages.signIn)
        XCTAssertNil(config.pages.templates)
        XCTAssertEqual(config.pages.language, .english)
        XCTAssertNil(config.pages.languageOverride)
    }

    func testTheDefaultLanguageAndTheOverride() throws {
        let config = try parse(minimal(plus: "pages:\n  language: pt-BR\n  language_override: zh-Hant\n"))
        XCTAssertEqual(config.pages.language, .brazilianPortuguese)
        XCTAssertEqual(config.pages.languageOverride, .traditionalChinese)
    }

    func testAnUnknownLanguageIsAnErrorAtItsLineAndColumnNamingTheKnownOnes() throws {
        for (key, value) in [("language", "pt"), ("language", "<script>"), ("language_override", "klingon"), ("language", "EN")] {
            let errors = try errors(minimal(plus: "pages:\n  \(key): \"\(value)\"\n"))
            XCTAssertEqual(errors.map(\.path), ["pages.\(key)"], "\(errors)")
            XCTAssertEqual(errors.first.map { [$0.line, $0.column] }, [12, 5 + key.count], "\(errors)")
            XCTAssertTrue(errors.first?.message.contains("en, de, fr, es, it, pt-BR, ja, ko, zh-Hans, zh-Hant, ar, he") ?? false,
                          "\(errors)")
        }
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
