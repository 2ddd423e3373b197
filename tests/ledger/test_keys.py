import pytest
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone

from reviewapp.core.signing import Signer
from reviewapp.ledger.keys import forget_cached_signer, server_signer
from reviewapp.ledger.models import SigningKey

pytestmark = pytest.mark.django_db


@pytest.fixture
def key_file(tmp_path, settings):
    path = tmp_path / "signing.key"
    Signer.generate().to_file(path)
    settings.REVIEWAPP_SIGNING_KEY = ""
    settings.REVIEWAPP_SIGNING_KEY_FILE = path
    forget_cached_signer()
    yield path
    forget_cached_signer()


def test_the_public_half_of_the_server_key_is_registered_on_first_use(key_file):
    signer = server_signer()
    stored = SigningKey.objects.get(key_id=signer.key_id)
    assert stored.public_key == signer.public_key_b64


def test_a_replaced_key_file_is_picked_up_without_clearing_the_cache(key_file):
    before = server_signer().key_id
    replacement = key_file.with_name("new.key")
    Signer.generate().to_file(replacement)
    replacement.replace(key_file)
    assert server_signer().key_id != before


def test_signing_with_a_retired_key_is_refused(key_file):
    key_id = server_signer().key_id
    SigningKey.objects.filter(key_id=key_id).update(retired_at=timezone.now())
    with pytest.raises(ImproperlyConfigured, match="retired"):
        server_signer()


def test_a_key_file_another_process_creates_first_is_the_one_signed_with(tmp_path, settings):
    path = tmp_path / "keys" / "signing.key"
    settings.REVIEWAPP_SIGNING_KEY = ""
    settings.REVIEWAPP_SIGNING_KEY_FILE = path
    settings.REVIEWAPP_SIGNING_KEY_AUTOCREATE = True
    theirs = Signer.generate()
    generate = Signer.generate

    def another_process_creates_it_meanwhile():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            theirs.to_file(path)
        return generate()

    forget_cached_signer()
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(Signer, "generate", staticmethod(another_process_creates_it_meanwhile))
            assert server_signer().key_id == theirs.key_id
    finally:
        forget_cached_signer()
    assert sorted(p.name for p in path.parent.iterdir()) == ["signing.key"]  # nothing staged left
