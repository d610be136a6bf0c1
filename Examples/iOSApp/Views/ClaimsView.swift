import SwiftUI

/// Signed in: the ID token's claims, verified by the SDK against the server's JWKS, and a sign-out button.
struct ClaimsView: View {
    @EnvironmentObject private var model: LatchAppModel

    var body: some View {
        List {
            Section {
                ForEach(model.claims) { claim in
                    LabeledContent(claim.name) {
                        Text(claim.value).textSelection(.enabled)
                    }
                }
            } header: {
                Text("Verified ID-token claims")
            } footer: {
                Text("`amr` says how you signed in: `hwk` for a key in hardware, `swk` for a synced passkey.")
            }

            if let binding = model.tokenBinding {
                Section("Tokens") {
                    LabeledContent("Bound to", value: binding)
                }
            }

            Section {
                Button("Sign out", role: .destructive) {
                    Task { await model.signOut() }
                }
            }
        }
        .refreshable { await model.loadClaims() }
    }
}
