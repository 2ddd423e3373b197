from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from reviewapp.review.models import ApiClient
from reviewapp.review.services.clients import ClientRefused, api_client_create


class Command(BaseCommand):
    help = (
        "Create an API client and print its bearer token once: the token alone on "
        "standard output, what was created on standard error. Only a digest of the "
        "token is stored. On any error nothing is printed on standard output."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="A unique name for the client, e.g. the agent system.")
        parser.add_argument(
            "--scopes",
            required=True,
            help=f"Comma-separated, from: {','.join(ApiClient.Scope.values)}",
        )
        parser.add_argument(
            "--user",
            help="A personal token: it reviews as this reviewer (scope review only) "
            "and dies with their account or reviewers-group membership.",
        )

    def handle(self, *args, name, scopes, user=None, **options):
        person = None
        if user:
            person = get_user_model().objects.filter(username=user).first()
            if person is None:
                raise CommandError(f"no user named {user!r}")
        try:
            client, token = api_client_create(name=name, scopes=scopes.split(","), user=person)
        except ClientRefused as exc:
            raise CommandError(str(exc)) from exc
        # The token alone on standard output, so that TOKEN=$(...) takes it whole;
        # what a person reads goes to standard error.
        self.stderr.write(
            f"Created API client {client.name!r} with scopes: {', '.join(client.scopes)}"
            + (f", acting as {person.get_username()}" if person else "")
            + "\n"
            f"Token prefix (shown in the admin): {client.token_prefix}\n"
            "The token is shown only now; store it safely.",
            style_func=lambda text: text,
        )
        self.stdout.write(token)
