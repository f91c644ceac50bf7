/// The kept Apple refresh tokens (`users.keep_refresh_tokens`): one key per user, the
/// sealed token beside the time of the sign-in that obtained it.
extension RedisStore {
    public func keepRefreshToken(_ subject: String, _ token: KeptRefreshToken, completion: @escaping StoreCompletion<Void>) {
        do throws(StoreError) { try checkKept(subject, token) } catch { return answerLater(.failure(error), completion) }
        let value = "\(token.atMs) \(token.sealed)"
        sendBytes([Array("SET".utf8), Array(schema.refreshToken(subject).utf8), Array(value.utf8), Array("EX".utf8),
                   Array(String(KeptRefreshToken.retentionSeconds).utf8)]) { [self] reply in
            guard case .simple("OK")? = reply else { return completion(.failure(failure(reply))) }
            completion(.success(()))
        }
    }

    public func keptRefreshToken(_ subject: String, completion: @escaping StoreCompletion<KeptRefreshToken?>) {
        do throws(StoreError) { try checkSubject(subject) } catch { return answerLater(.failure(error), completion) }
        sendBytes([Array("GET".utf8), Array(schema.refreshToken(subject).utf8)]) { [self] reply in
            switch reply {
            case .bulk(nil)?: completion(.success(nil))
            case .bulk(let bytes?)?:
                let parts = bytes.split(separator: UInt8(ascii: " "), maxSplits: 1, omittingEmptySubsequences: false)
                guard parts.count == 2, let atMs = RedisSchema.number(parts[0]), !parts[1].isEmpty else {
                    return completion(.success(nil))
                }
                completion(.success(KeptRefreshToken(atMs: atMs, sealed: String(decoding: parts[1], as: UTF8.self))))
            default: completion(.failure(failure(reply)))
            }
        }
    }

    public func forgetRefreshToken(_ subject: String, completion: @escaping StoreCompletion<Void>) {
        do throws(StoreError) { try checkSubject(subject) } catch { return answerLater(.failure(error), completion) }
        sendBytes([Array("DEL".utf8), Array(schema.refreshToken(subject).utf8)]) { [self] reply in
            guard case .integer? = reply else { return completion(.failure(failure(reply))) }
            completion(.success(()))
        }
    }
}
