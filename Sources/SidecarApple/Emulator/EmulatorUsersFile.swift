import Foundation
import Glibc
import SidecarCrypto

/// Reads the `--users` JSON file: `[{"email", "firstName"?, "lastName"?, "hideMyEmail"?}]`.
public enum EmulatorUsersFile {
    public static func load(_ path: String) throws(EmulatorConfigurationError) -> [TestUser] {
        guard let bytes = readFile(path) else { throw .usersFile("cannot read \(path)") }
        guard case .array(let items)? = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)) else {
            throw .usersFile("\(path) is not a JSON array")
        }
        var users: [TestUser] = []
        for item in items {
            guard let object = item.objectValue, let email = object["email"]?.stringValue, TestUser.isPlausibleEmail(email)
            else { throw .usersFile("\(path): every user needs a valid \"email\"") }
            users.append(TestUser(email: email, firstName: object["firstName"]?.stringValue,
                                  lastName: object["lastName"]?.stringValue,
                                  hideMyEmail: object["hideMyEmail"]?.lenientBoolValue ?? false))
        }
        return users
    }

    /// A small file's bytes, nil when unreadable.
    public static func read(_ path: String) -> [UInt8]? { readFile(path) }
}
