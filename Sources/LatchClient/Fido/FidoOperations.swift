import Foundation
import LatchModel

/// A FIDO operation in the shape of Nevis' mobile SDK: made by the client, given its handlers, then run with
/// ``execute()`` — the outcome goes to exactly one of `onSuccess` or `onError`. The async methods of ``UserClient``
/// are the same operations for code that prefers `await`.
public struct FidoOperation<Success: Sendable>: Sendable {
    let run: @Sendable () async throws(UserClientError) -> Success
    var success: (@Sendable (Success) -> Void)?
    var failure: (@Sendable (UserClientError) -> Void)?

    init(_ run: @escaping @Sendable () async throws(UserClientError) -> Success) {
        self.run = run
    }

    /// Called with the result when the operation succeeds.
    public func onSuccess(_ handler: @escaping @Sendable (Success) -> Void) -> FidoOperation {
        var copy = self
        copy.success = handler
        return copy
    }

    /// Called with the error when the operation fails (a wrong PIN is ``UserClientError/pinAttemptFailed(_:)``
    /// with the server's count; a PIN outside the policy ``UserClientError/pinRefused(_:)`` — ask again).
    public func onError(_ handler: @escaping @Sendable (UserClientError) -> Void) -> FidoOperation {
        var copy = self
        copy.failure = handler
        return copy
    }

    /// Starts the operation; the returned task ends after the handler ran.
    @discardableResult
    public func execute() -> Task<Void, Never> {
        let (run, success, failure) = (run, success, failure)
        return Task {
            do throws(UserClientError) {
                success?(try await run())
            } catch {
                failure?(error)
            }
        }
    }
}

extension UserClient {
    /// Registration (signed in): the first of `authenticators` the device supports and the server's policy allows
    /// (``AuthenticatorSelector``) is registered — with `pin` for a PIN authenticator, checked by ``PinEnroller``.
    public nonisolated func registrationOperation(
        _ authenticators: [any FidoAuthenticator], pin: String? = nil, name: String? = nil
    ) -> FidoOperation<FidoAuthenticatorInfo> {
        FidoOperation { () async throws(UserClientError) -> FidoAuthenticatorInfo in
            let policy = try await self.fidoPolicy()
            guard let (_, chosen) = AuthenticatorSelector(policy: policy).select(from: authenticators) else {
                throw .invalidConfiguration("no authenticator on this device is allowed by the server's policy")
            }
            return try await self.registerFidoAuthenticator(chosen, pin: pin, name: name)
        }
    }

    /// Authentication: a sign-in with the credential `authenticator` registered on this device.
    public nonisolated func authenticationOperation(_ authenticator: any FidoAuthenticator, pin: String? = nil) -> FidoOperation<AuthenticationTokens> {
        FidoOperation { () async throws(UserClientError) -> AuthenticationTokens in try await self.signInWithFido(authenticator, pin: pin) }
    }

    /// Deregistration of one authenticator, or of all of them when `id` is nil (a recent sign-in is needed).
    public nonisolated func deregistrationOperation(id: String? = nil) -> FidoOperation<Void> {
        FidoOperation { () async throws(UserClientError) in
            if let id { try await self.deleteFidoAuthenticator(id: id) } else { try await self.deleteAllFidoAuthenticators() }
        }
    }

    /// PIN change of this device's PIN authenticator.
    public nonisolated func pinChangeOperation(_ authenticator: PinAuthenticator, oldPin: String, newPin: String) -> FidoOperation<FidoAuthenticatorInfo> {
        FidoOperation { () async throws(UserClientError) -> FidoAuthenticatorInfo in
            try await self.changePin(authenticator, oldPin: oldPin, newPin: newPin)
        }
    }
}
