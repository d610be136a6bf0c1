import SwiftUI

/// Shows the screen the model asks for, a spinner while an SDK call runs, and the model's alerts.
struct RootView: View {
    @EnvironmentObject private var model: LatchAppModel

    var body: some View {
        NavigationStack {
            content
                .navigationTitle("Latch example")
                .disabled(model.progress != nil)
                .overlay {
                    if let progress = model.progress {
                        ProgressView(progress)
                            .padding()
                            .background(.regularMaterial, in: RoundedRectangle(cornerRadius: 12))
                    }
                }
        }
        .alert(
            model.notice?.title ?? "",
            isPresented: Binding(get: { model.notice != nil }, set: { if !$0 { model.notice = nil } }),
            presenting: model.notice
        ) { _ in
            Button("OK", role: .cancel) {}
        } message: { notice in
            Text(notice.message)
        }
    }

    @ViewBuilder private var content: some View {
        switch model.screen {
        case .loading:
            ProgressView()
        case .welcome:
            WelcomeView()
        case .signedOut(let username, let method):
            SignedOutView(username: username, method: method)
        case .signedIn:
            ClaimsView()
        case .broken(let message):
            VStack(spacing: 12) {
                Image(systemName: "exclamationmark.triangle").font(.largeTitle)
                Text("The app cannot reach Latch").font(.headline)
                Text(message).font(.callout).multilineTextAlignment(.center).foregroundStyle(.secondary)
            }
            .padding()
        }
    }
}
