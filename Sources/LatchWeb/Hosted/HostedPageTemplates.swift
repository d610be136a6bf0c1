/// The hosted pages' templates and stylesheet: the `head` and `foot` partials and one template per page. Words come
/// from `HostedWords` (`t.<name>`), values from the page's model.
public enum HostedPageTemplates {
    /// The stylesheet (`/oauth2/assets/latch.css`): readable on phones and desktops, dark mode, visible focus.
    public static let stylesheet = """
        :root { color-scheme: light dark; --accent: #2451b7; --fg: #1b1f24; --bg: #f6f7f9; --card: #fff; --muted: #57606a; }
        @media (prefers-color-scheme: dark) { :root { --accent: #8fb0ff; --fg: #e6e8eb; --bg: #111418; --card: #1b2027; --muted: #a4adb8; } }
        * { box-sizing: border-box; }
        body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
        main { max-width: 28rem; margin: 10vh auto; padding: 2rem; background: var(--card); border-radius: 12px; box-shadow: 0 1px 4px rgba(0,0,0,.12); }
        h1 { font-size: 1.4rem; margin: 0 0 1rem; }
        p { color: var(--muted); }
        ul { list-style: none; padding: 0; margin: 1.5rem 0 0; }
        li + li { margin-top: .75rem; }
        a.button, button { display: block; width: 100%; padding: .8rem 1rem; border: 1px solid var(--accent); border-radius: 8px; color: var(--accent);
          background: transparent; font: inherit; text-align: center; text-decoration: none; cursor: pointer; }
        a.button:hover, button:hover { background: var(--accent); color: var(--card); }
        a:focus-visible, button:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
        code { font-size: .85em; }
        @media (max-width: 30rem) { main { margin: 0; border-radius: 0; min-height: 100vh; } }
        """

    /// Template name to Mustache text.
    public static let sources: [String: String] = [
        "head": """
            <!doctype html>
            <html lang="{{lang}}">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="referrer" content="no-referrer">
            {{#refreshURL}}<meta http-equiv="refresh" content="0;url={{refreshURL}}">{{/refreshURL}}
            <title>{{title}}</title>
            <link rel="stylesheet" href="/oauth2/assets/latch.css">
            </head>
            <body>
            <main>
            """,
        "foot": """
            </main>
            </body>
            </html>
            """,
        "chooser": """
            {{> head}}
            <h1 id="title">{{title}}</h1>
            <p>{{t.chooserIntro}} <strong>{{clientName}}</strong>{{#t.chooserIntroAfter}} {{t.chooserIntroAfter}}{{/t.chooserIntroAfter}}.</p>
            <nav aria-labelledby="title">
            <ul>
            {{#choices}}
            <li><a class="button" id="idp-{{id}}" href="{{url}}">{{t.continueWith}} {{name}}</a></li>
            {{/choices}}
            </ul>
            </nav>
            {{> foot}}
            """,
        "error": """
            {{> head}}
            <h1>{{title}}</h1>
            <p role="alert">{{message}}</p>
            <p><small>{{t.errorCode}} <code id="error-code">{{code}}</code></small></p>
            {{> foot}}
            """,
        "confirmSignOut": """
            {{> head}}
            <h1>{{title}}</h1>
            <p>{{t.confirmIntro}}</p>
            <form method="post" action="/oauth2/logout">
            {{#fields}}
            <input type="hidden" name="{{name}}" value="{{value}}">
            {{/fields}}
            <input type="hidden" name="csrf" value="{{csrf}}">
            <input type="hidden" name="confirm" value="yes">
            <button type="submit" id="sign-out">{{t.signOut}}</button>
            </form>
            {{> foot}}
            """,
        "proceed": """
            {{> head}}
            <h1>{{title}}</h1>
            <p><a class="button" id="continue" href="{{refreshURL}}">{{t.continue}}</a></p>
            {{> foot}}
            """,
        "signedOut": """
            {{> head}}
            <h1>{{title}}</h1>
            <p>{{t.signedOutIntro}}</p>
            {{#returnURL}}<p><a class="button" href="{{returnURL}}">{{t.returnToApp}}</a></p>{{/returnURL}}
            {{> foot}}
            """,
    ]
}
