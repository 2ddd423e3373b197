import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from reviewapp.review.models import CheckerConfig, Lens, Panel, PanelLens, RecordedResponse


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("pw-for-tests")


class ReviewerFactory(UserFactory):
    @factory.post_generation
    def reviewer_group(self, create, extracted, **kwargs):
        if create:
            self.groups.add(Group.objects.get_or_create(name="reviewers")[0])


class ReconcilerFactory(ReviewerFactory):
    @factory.post_generation
    def reconciler_group(self, create, extracted, **kwargs):
        if create:
            self.groups.add(Group.objects.get_or_create(name="reconcilers")[0])


class LensFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Lens

    name = factory.Sequence(lambda n: f"lens-{n}")
    backend = Lens.Backend.RECORDED
    instructions = "Judge whether the answer is correct."


class CheckerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = CheckerConfig

    name = factory.Sequence(lambda n: f"checker-{n}")
    kind = CheckerConfig.Kind.REGEX
    settings = {"pattern": ".", "must_match": True}


class PanelFactory(factory.django.DjangoModelFactory):
    """A panel; pass `lenses=[...]` (ordered) and optionally `checkers=[...]`."""

    class Meta:
        model = Panel
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"panel-{n}")
    need = 1

    @factory.post_generation
    def lenses(self, create, extracted, **kwargs):
        for position, lens in enumerate(extracted or []):
            PanelLens.objects.create(panel=self, lens=lens, position=position)

    @factory.post_generation
    def checkers(self, create, extracted, **kwargs):
        if extracted:
            self.checkers.set(extracted)


def recorded(lens: Lens, content: str, *responses) -> RecordedResponse:
    import hashlib

    return RecordedResponse.objects.create(
        lens=lens,
        content_sha256=hashlib.sha256(content.encode()).hexdigest(),
        responses=list(responses),
    )
